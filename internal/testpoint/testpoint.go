// Package testpoint holds the named points where cx's fault tests make a
// real process crash or panic: CX_TEST_CRASH_AT kills the process (every
// step of ending and committing can be interrupted and finished later by a
// sweep), CX_TEST_PANIC_AT panics (a bug in cx still answers Codex and
// leaves the terminal whole). Unset, each point is one environment read.
// It also holds, by name, every other test setting production code reads
// (HookBacklog, Lease, Backoff, TapLog, Relay, NoLeader, Clock): no CX_TEST_
// variable is read anywhere else.
package testpoint

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CrashPoints are the points CX_TEST_CRASH_AT may name, in the order a
// session's end meets them: learning a thread (learn), capturing its
// rollout (capture), the generation ended (ended), its job leased (leased),
// the commit begun (committing), a sink sending (sending) and sent (sent),
// the sink's acceptance recorded (accepted), the job done (committed).
// The house test holds this list to the Crash calls in the code.
var CrashPoints = []string{"learn", "capture", "ended", "leased", "committing", "sending", "sent", "accepted", "committed"}

// PanicPoints are the points CX_TEST_PANIC_AT may name: a hook's work and
// its main goroutine, a supervised run's open and finish, discovery of a
// Codex's threads, an app-server frame. CX_TEST_PANIC (WrapperPanic)
// names the PTY relay's: "started", "output".
var PanicPoints = []string{"hook-work", "hook-main", "supervise-open", "supervise-finish", "discover", "tap-frame"}

// Crash kills this process with SIGKILL when CX_TEST_CRASH_AT names point.
func Crash(point string) {
	if v := os.Getenv("CX_TEST_CRASH_AT"); v != "" && v == point {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
}

// Panic panics when CX_TEST_PANIC_AT names point.
func Panic(point string) { PanicOn("CX_TEST_PANIC_AT", point) }

// PanicOn panics when the variable env names point (the wrapper's own
// points use CX_TEST_PANIC).
func PanicOn(env, point string) {
	if v := os.Getenv(env); v != "" && v == point {
		panic("test panic at " + point)
	}
}

// Off reports whether CX_TEST_OFF (a comma-separated list) names a
// safeguard that a test turns off to prove another alone ("pdeathsig":
// the lifeline alone keeps Codex from outliving cx, as on macOS).
func Off(name string) bool {
	for _, v := range strings.Split(os.Getenv("CX_TEST_OFF"), ",") {
		if v == name {
			return true
		}
	}
	return false
}

// The tests' settings that shorten what a user never waits for, or pick a
// path a test must reach: read here and nowhere else, so every seam of
// cx's production code that a test can move is listed in one file.
const (
	HookBacklog = "CX_TEST_HOOK_BACKLOG" // bytes: the most unread rollout a hook reads
	Lease       = "CX_TEST_LEASE"        // duration: a job's lease
	Backoff     = "CX_TEST_BACKOFF"      // duration: the retry backoff's base
	TapLog      = "CX_TEST_TAP_LOG"      // directory: app-server mode copies both relayed streams there
	Relay       = "CX_TEST_RELAY"        // "pipelined": the PTY relay without the polled writer
	NoLeader    = "CX_TEST_NO_LEADER"    // "1": a PTY session without cx's session leader
	Clock       = "CX_TEST_CLOCK"        // duration: the ledger's clock runs this far ahead (a sweep "later", with no wait)
	// WrapperPanic names a point of the PTY relay to panic at (PanicOn).
	WrapperPanic = "CX_TEST_PANIC"
)

// FaultPoints name where a process is to crash or panic: a hook whose
// environment sets one is answered in its own process, never by the hook
// host (the fault is that process's).
var FaultPoints = []string{"CX_TEST_CRASH_AT", "CX_TEST_PANIC_AT"}

// HookSettings are the settings a hook's work reads from the process that
// does it: the hook host (whose process has the environment it was
// started with) takes a hook only when its own are the hook's — a run
// whose every process has the same settings (the chaos run) is answered
// by the host as a user's is.
var HookSettings = []string{HookBacklog, Lease, Backoff, Clock}

// Duration is the test setting name as a positive duration, if set.
func Duration(name string) (time.Duration, bool) {
	d, err := time.ParseDuration(os.Getenv(name))
	return d, err == nil && d > 0
}

// Int is the test setting name as a positive integer, if set.
func Int(name string) (int64, bool) {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	return n, err == nil && n > 0
}

// String is the test setting name ("" when unset).
func String(name string) string { return os.Getenv(name) }

// clockAhead is Clock's setting, read once.
var clockAhead, _ = Duration(Clock)

// Now is the clock of cx's state machine: the system's, in UTC, unless a
// test set it ahead (Clock).
func Now() time.Time { return time.Now().UTC().Add(clockAhead) }
