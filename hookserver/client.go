package hookserver

import (
	"cx/internal/hookwire"
	"cx/internal/proc"
)

// startHost starts CX_HOME's background sweeper to be the hook host
// (`cx ctl sweep --background --hooks`: no sweep first): apart, as no
// child of this process (proc.StartApart: a caller that lives on, a run's
// cx), else detached (a hook's process, which ends at once); a variable
// so in-process tests start none.
var startHost = startHostOf

// startHostOf is startHost outside tests.
func startHostOf(apart bool) error {
	args := []string{"ctl", "sweep", "--background", "--hooks"}
	if apart {
		return proc.StartApart(args...)
	}
	return proc.StartDetached(args...)
}

// Prestart starts CX_HOME home's hook host beside a Codex cx launched, when
// none holds its place (no host, no sweeper) and cx's hooks run in that
// Codex (active, asked only then): the run's first hook finds it
// listening, instead of starting it on Codex's time (a SessionStart that
// Codex waits for). A hook that finds the place free meanwhile starts it
// itself, and this one leaves at once. The host is no child of the run's
// cx (which lives on: a host that left before it would stay its zombie).
// It reports whether it started one.
func Prestart(home string, environ []string, active func() bool) bool {
	if !hookwire.StartsHost(environ) || hookwire.SweeperRunning(home) || !active() {
		return false
	}
	return startHost(true) == nil
}
