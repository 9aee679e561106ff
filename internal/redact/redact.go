// Package redact removes secrets from text before cx stores, sends or
// injects it: provider API keys and tokens, private key blocks,
// Authorization headers, and KEY=secret assignments of secret-looking names.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Mask replaces a secret; it keeps a short hint of what kind it was.
const Mask = "[REDACTED]"

type rule struct {
	re   func() *regexp.Regexp // compiled at its first scan
	repl string
	// hints: every match contains one of these (lower case, looked up in
	// the lower-cased text). A text with none of them skips the rule's
	// scan; the regular expression stays the judge of what is a secret.
	hints []string
}

// rules are made on first use, and each rule's expression compiled at its
// first scan: cx's hook runs on every turn, most of its invocations never
// redact anything, and most text (a log line) holds no rule's hints — so a
// process compiles the expressions of the rules its text calls for, not
// all fourteen.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		// Private key blocks (PEM), whole.
		{lazy(`(?s)-----BEGIN ((?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----.*?-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----`), "-----BEGIN $1-----" + Mask + "-----END $1-----", []string{"-----begin "}},
		// Authorization / auth-ish headers.
		{lazy(`(?im)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie)(\s*:\s*)(?:(bearer|basic|token|bot)\s+)?[^\s"'\r\n,;]+`), "$1$2$3 " + Mask, []string{"authorization", "api-key", "x-auth-token", "cookie"}},
		// Provider tokens with recognisable shapes.
		{lazy(`\bsk-(?:proj-|ant-(?:api\d\d-)?|live_|test_)?[A-Za-z0-9_\-]{16,}`), Mask, []string{"sk-"}},              // OpenAI, Anthropic, Stripe-like
		{lazy(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b`), Mask, []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}}, // GitHub
		{lazy(`\bgithub_pat_[A-Za-z0-9_]{40,}\b`), Mask, []string{"github_pat_"}},                                      // GitHub fine-grained
		{lazy(`\bglpat-[A-Za-z0-9_\-]{20,}\b`), Mask, []string{"glpat-"}},                                              // GitLab
		{lazy(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`), Mask, []string{"xox"}},                                             // Slack
		{lazy(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Mask, []string{"akia", "asia"}},                                        // AWS access key id
		{lazy(`\bAIza[0-9A-Za-z_\-]{35}\b`), Mask, []string{"aiza"}},                                                   // Google API key
		{lazy(`\bhf_[A-Za-z0-9]{30,}\b`), Mask, []string{"hf_"}},                                                       // Hugging Face
		{lazy(`\bnpm_[A-Za-z0-9]{36}\b`), Mask, []string{"npm_"}},                                                      // npm
		{lazy(`\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{20,}\b`), Mask, []string{"_live_", "_test_"}},                  // Stripe
		{lazy(`\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\b`), Mask, []string{"eyj"}},       // JWT
		// Credentials inside URLs: scheme://user:password@host
		{lazy(`\b([a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]{3,}@`), "${1}" + Mask + "@", []string{"://"}},
	}
})

// lazy compiles expr at its first use.
func lazy(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Secret-looking assignment: NAME=value or NAME: value where NAME says it is
// secret (…KEY, …TOKEN, …SECRET, …PASSWORD, …PASSWD, …CREDENTIALS, …AUTH).
var assignRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:API_?KEY|ACCESS_?KEY|SECRET(?:_?KEY)?|TOKEN|PASSWORD|PASSWD|PWD|CREDENTIALS?|PRIVATE_?KEY|AUTH(?:_?TOKEN)?))(\s*[=:]\s*)("[^"\n]*"|'[^'\n]*'|[^\s"',;]+)`)
})

// assignHints: every secret-looking assignment's name contains one.
var assignHints = []string{"key", "token", "secret", "passw", "pwd", "credential", "auth"}

// String returns s with secrets replaced by Mask.
func String(s string) string { return redact(s, true) }

// redact is String; without hints it runs every rule's scan (the tests
// hold the two to the same answers).
func redact(s string, hinted bool) string {
	if s == "" {
		return s
	}
	lower := ""
	if hinted {
		lower = strings.ToLower(s)
	}
	applies := func(hints []string) bool {
		if !hinted {
			return true
		}
		for _, h := range hints {
			if strings.Contains(lower, h) {
				return true
			}
		}
		return false
	}
	for _, r := range rules() {
		if applies(r.hints) {
			s = r.re().ReplaceAllString(s, r.repl)
		}
	}
	if !applies(assignHints) {
		return s
	}
	re := assignRE()
	s = re.ReplaceAllStringFunc(s, func(m string) string {
		sub := re.FindStringSubmatch(m)
		val := strings.Trim(sub[3], `"'`)
		if !looksSecret(val) {
			return m
		}
		return sub[1] + sub[2] + Mask
	})
	return s
}

// looksSecret keeps obvious non-secrets (empty, placeholders, references
// to other variables, booleans) readable.
func looksSecret(v string) bool {
	if len(v) < 4 || strings.Contains(v, Mask) {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "changeme", "example", "xxx", "xxxx", "redacted", "<redacted>", "your-key-here":
		return false
	}
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "${") || strings.HasPrefix(v, "<") || strings.HasPrefix(v, "os.") || strings.HasPrefix(v, "env.") || strings.HasPrefix(v, "process.env") {
		return false
	}
	return true
}

// Strings is String of each of ss, in a new slice.
func Strings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return out
}
