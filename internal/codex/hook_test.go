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

// A user's $SHELL (any of these) may stand between Codex and its hook
// command; Codex itself and other programs do not.
func TestIsHookShell(t *testing.T) {
	for _, comm := range []string{"sh", "bash", "dash", "zsh", "fish", "ksh", "tcsh", "env"} {
		if !IsHookShell(comm) {
			t.Errorf("%s is not taken for a hook's shell", comm)
		}
	}
	for _, comm := range []string{"codex", "node", "cx", "cx-hook", "tokio-runtime-w"} {
		if IsHookShell(comm) {
			t.Errorf("%s is taken for a hook's shell", comm)
		}
	}
}
