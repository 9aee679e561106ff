package codex

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// How configuration reaches Codex: `-c key=value` (or --config), the value
// TOML (an unparsable value is taken as a literal string), over the user
// config.toml in its home.

const developerInstructions = "developer_instructions"

// DeveloperInstructionsFlag names, for messages, how cx hands Codex
// context when hooks cannot.
const DeveloperInstructionsFlag = "-c " + developerInstructions

// UserDeveloperInstructions finds the user's own developer instructions:
// their `-c developer_instructions=…` (with the index of its value in args),
// else config.toml's in home (index -1).
func UserDeveloperInstructions(args []string, home string) (string, int) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			break
		}
		if (args[i] == "-c" || args[i] == "--config") && strings.HasPrefix(args[i+1], developerInstructions+"=") {
			raw := strings.TrimPrefix(args[i+1], developerInstructions+"=")
			var v struct {
				V string `toml:"v"`
			}
			if _, err := toml.Decode("v = "+raw, &v); err == nil {
				return v.V, i + 1
			}
			return raw, i + 1 // Codex takes an unparsable value as a literal string
		}
	}
	var cfg struct {
		DeveloperInstructions string `toml:"developer_instructions"`
	}
	if data, err := os.ReadFile(filepath.Join(home, "config.toml")); err == nil {
		_, _ = toml.Decode(string(data), &cfg)
	}
	return cfg.DeveloperInstructions, -1
}

// WithDeveloperInstructions returns args giving Codex value as its
// developer instructions: the user's -c value at index at replaced, or
// (at < 0) a -c put first.
func WithDeveloperInstructions(args []string, at int, value string) []string {
	kv := developerInstructions + "=" + tomlString(value)
	if at >= 0 {
		out := append([]string(nil), args...)
		out[at] = kv
		return out
	}
	return append([]string{"-c", kv}, args...)
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
