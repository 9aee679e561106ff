package redact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/redact/redacttest"
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

// The hints only skip scans that could find nothing: with and without
// them, the same answer — on every secret sample, each embedded in text
// and in mixed case, and on every line of the recorded rollouts.
func TestHintsChangeNothing(t *testing.T) {
	var corpus []string
	for _, c := range redacttest.Secrets {
		corpus = append(corpus, c.In, "see "+c.In+" there", strings.ToUpper(c.In), strings.ToLower(c.In), c.In+"\n"+c.In)
	}
	paths, _ := filepath.Glob("../../testdata/rollouts/*/*.jsonl")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		corpus = append(corpus, strings.Split(string(data), "\n")...)
	}
	for _, s := range corpus {
		if got, want := redact(s, true), redact(s, false); got != want {
			t.Errorf("hinted %q\n  gives %q\n  every rule gives %q", s, got, want)
		}
	}
}

// BenchmarkString: a long prompt with no secret in it, the common case.
func BenchmarkString(b *testing.B) {
	s := strings.Repeat("refactor the parser so the tests pass; run go test ./... and fix what fails. ", 200)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		_ = String(s)
	}
}
