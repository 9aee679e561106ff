package ovclient

import (
	"os"
	"path/filepath"
	"testing"
)

// What DetectPlugin read is kept while Codex's files stay as they were,
// and read again as soon as one changes: the plugin installed, enabled,
// disabled, its hooks added and removed, between two asks of one process.
func TestDetectPluginFollowsTheFiles(t *testing.T) {
	home := t.TempDir()
	config, hooks := filepath.Join(home, "config.toml"), filepath.Join(home, "hooks.json")
	env := func(string) (string, bool) { return "", false }
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
		active bool
	}{
		{"no files", func() {}, false},
		{"asked again", func() {}, false},
		{"a config without it", func() { write(config, "model = \"x\"\n") }, false},
		{"enabled as a plugin", func() { write(config, "[plugins.\"openviking-memory@market\"]\nenabled = true\n") }, true},
		{"asked again", func() {}, true},
		{"disabled", func() { write(config, "[plugins.\"openviking-memory@market\"]\nenabled = false\n") }, false},
		{"its hooks installed", func() {
			write(hooks, `{"hooks":{"Stop":[{"hooks":[{"command":"node /x/scripts/auto-capture.mjs"}]}]}}`)
		}, true},
		{"its hooks removed", func() { os.Remove(hooks) }, false},
	}
	for _, st := range steps {
		st.change()
		if got := DetectPlugin(home, env).Active(); got != st.active {
			t.Fatalf("%s: active %v, want %v", st.name, got, st.active)
		}
	}
}
