package hookserver

import (
	"io"
	"net"
	"os"
	"time"

	"cx/internal/hookwire"
	"cx/internal/proc"
)

// StopHost asks CX_HOME's hook host to leave and waits, up to d, until it
// has (its place is free): its hooks are answered by their own processes
// from then on. Tests call it before their CX_HOME is removed.
func StopHost(home string, d time.Duration) {
	if conn, err := net.DialTimeout("unix", hookwire.SocketPath(home), 200*time.Millisecond); err == nil {
		_, _ = conn.Write(hookwire.Request{Stop: true}.Encode())
		_ = conn.SetReadDeadline(time.Now().Add(d))
		_, _ = io.ReadAll(conn)
		conn.Close()
	}
	for end := time.Now().Add(d); sweeperRunning(home) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

// EnsureHost starts CX_HOME's hook host unless one runs: a supervised run
// does, beside its Codex's start, so that Codex's first hooks find it. A
// process with a hook setting of the tests starts none (the host would
// not take hooks).
func EnsureHost(home string) {
	if !hookwire.Forwardable(os.Environ()) || sweeperRunning(home) {
		return
	}
	_ = startHost()
}

// startHost starts CX_HOME's background sweeper to be the hook host
// (`cx ctl sweep --background --hooks`: no sweep first); a variable so
// in-process tests start none.
var startHost = func() error { return proc.StartDetached("ctl", "sweep", "--background", "--hooks") }
