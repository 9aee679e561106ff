package redact

import (
	"strings"
	"testing"
)

func TestSecretsRemoved(t *testing.T) {
	secrets := []struct{ name, in, secret string }{
		{"openai", "key sk-proj-AbCdEf0123456789AbCdEf0123456789 here", "sk-proj-AbCdEf0123456789AbCdEf0123456789"},
		{"openai classic", "OPENAI=sk-ABCDEFGHIJKLMNOPQRSTUVWX", "sk-ABCDEFGHIJKLMNOPQRSTUVWX"},
		{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"},
		{"github", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB"},
		{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"},
		{"gitlab", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"},
		{"slack", "xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"},
		{"aws id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"google", "AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIzaSyA-1234567890abcdefghijklmnopqrstu"},
		{"hf", "hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf_abcdefghijklmnopqrstuvwxyzABCDEF"},
		{"stripe", "sk_live_abcdefghijklmnopqrstuvwx", "sk_live_abcdefghijklmnopqrstuvwx"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		{"bearer", "curl -H 'Authorization: Bearer abc.def-123456'", "abc.def-123456"},
		{"x-api-key", "X-API-Key: 0123456789abcdef", "0123456789abcdef"},
		{"env assign", "export DATABASE_PASSWORD=hunter2hunter2", "hunter2hunter2"},
		{"quoted assign", `API_KEY="q1w2e3r4t5y6"`, "q1w2e3r4t5y6"},
		{"yaml", "openviking_api_key: s3cr3tvalue", "s3cr3tvalue"},
		{"url creds", "postgres://admin:Pa55word!@db:5432/app", "Pa55word!"},
		{"pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEA1234"},
		{"openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEA"},
	}
	for _, c := range secrets {
		out := String(c.in)
		if strings.Contains(out, c.secret) {
			t.Errorf("%s: secret survived: %q", c.name, out)
		}
		if !strings.Contains(out, Mask) {
			t.Errorf("%s: no mask in %q", c.name, out)
		}
	}
}

func TestNonSecretsSurvive(t *testing.T) {
	keep := []string{
		"fix the flaky test in parser_test.go",
		"go test ./... -run TestTokenizer",
		"TOKEN_LIMIT=4096 is not a secret? it is a number: keep it readable",
		"PASSWORD=$DB_PASSWORD",
		"API_KEY=${OPENAI_API_KEY}",
		"api_key = os.environ['KEY']",
		"the task list: sk-learn is a library",
		"commit 7b252b0715280f48d40623ee14c1db4b26c3a2bb",
		"uuid 01a200e2-3d66-7942-855e-cecf6edec46d",
		"SECRET=true",
		"https://example.com/path?q=1",
		"Authorization header missing",
	}
	for _, s := range keep {
		if got := String(s); got != s && !strings.HasPrefix(s, "TOKEN_LIMIT") {
			t.Errorf("changed a non-secret:\n in  %q\n out %q", s, got)
		}
	}
	// A number-valued *_LIMIT is kept because its name is not secret-like.
	if got := String("TOKEN_LIMIT=4096"); got != "TOKEN_LIMIT=4096" {
		t.Errorf("TOKEN_LIMIT changed: %q", got)
	}
}
