// Package testpoint holds the named points where cx's fault tests make a
// real process crash or panic: CX_TEST_CRASH_AT kills the process (every
// step of ending and committing can be interrupted and finished later by a
// sweep), CX_TEST_PANIC_AT panics (a bug in cx still answers Codex and
// leaves the terminal whole). Unset, each point is one environment read.
//
// It imports only the standard library.
package testpoint

import (
	"os"
	"strings"
	"syscall"
	"time"
)

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
