package hookserver

import (
	"cx/internal/hookwire"
	"cx/internal/proc"
)

// startHost starts CX_HOME's background sweeper to be the hook host
// (`cx ctl sweep --background --hooks`: no sweep first); a variable so
// in-process tests start none.
var startHost = func() error { return proc.StartDetached("ctl", "sweep", "--background", "--hooks") }

// Prestart starts CX_HOME home's hook host beside a Codex cx launched, when
// none holds its place (no host, no sweeper) and cx's hooks run in that
// Codex (active, asked only then): the run's first hook finds it
// listening, instead of starting it on Codex's time (a SessionStart that
// Codex waits for). A hook that finds the place free meanwhile starts it
// itself, and this one leaves at once. It reports whether it started one.
func Prestart(home string, environ []string, active func() bool) bool {
	if !hookwire.StartsHost(environ) || hookwire.SweeperRunning(home) || !active() {
		return false
	}
	return startHost() == nil
}
