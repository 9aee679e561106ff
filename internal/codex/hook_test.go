package codex

import (
	"slices"
	"testing"
)

// A hook's command runs in the user's shell, else /bin/sh, with -c.
func TestHookShell(t *testing.T) {
	for _, c := range []struct {
		shell string
		want  []string
	}{
		{"/bin/bash", []string{"/bin/bash", "-c", "exec x Stop"}},
		{"/usr/bin/zsh", []string{"/usr/bin/zsh", "-c", "exec x Stop"}},
		{"", []string{"/bin/sh", "-c", "exec x Stop"}},
	} {
		getenv := func(k string) string {
			if k == "SHELL" {
				return c.shell
			}
			return ""
		}
		if got := HookShell(getenv, "exec x Stop"); !slices.Equal(got, c.want) {
			t.Errorf("SHELL=%q: %q, want %q", c.shell, got, c.want)
		}
	}
}
