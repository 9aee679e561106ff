package runproc

import (
	"fmt"
	"os"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/proc"
)

// threadAt is a UUIDv7 thread id born at t, as Codex makes them.
func threadAt(t time.Time) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7000-8000-000000000001", ms>>16, ms&0xffff)
}

func TestBornBeside(t *testing.T) {
	start := time.Now().Add(-time.Minute)
	self := ledger.Run{ID: "self", CodexHome: "/h", StartedAt: start.Add(-time.Hour)}
	// A sibling whose Codex is not recorded yet while its cx (this test) runs.
	live := ledger.Run{ID: "sib", CodexHome: "/h", StartedAt: start, PID: os.Getpid(), PIDStart: proc.StartTime(os.Getpid())}
	dead := live
	dead.ID, dead.PID, dead.PIDStart = "dead", 1<<22+7, 1 // no such process
	elsewhere := live
	elsewhere.ID, elsewhere.CodexHome = "other-home", "/other"
	codexGone := live
	codexGone.ID, codexGone.CodexPID, codexGone.CodexStart = "codex-gone", 1<<22+7, 1 // cx runs, its Codex ended

	for _, tc := range []struct {
		name string
		runs []ledger.Run
		id   string
		want bool
	}{
		{"born after a live sibling's start", []ledger.Run{self, live}, threadAt(start.Add(time.Second)), true},
		{"born within the clock's slack", []ledger.Run{self, live}, threadAt(start.Add(-500 * time.Millisecond)), true},
		{"born before it", []ledger.Run{self, live}, threadAt(start.Add(-5 * time.Second)), false},
		{"only this run", []ledger.Run{self}, threadAt(start.Add(time.Second)), false},
		{"a dead sibling", []ledger.Run{self, dead}, threadAt(start.Add(time.Second)), false},
		{"a sibling of another home", []ledger.Run{self, elsewhere}, threadAt(start.Add(time.Second)), false},
		{"a sibling whose Codex ended", []ledger.Run{self, codexGone}, threadAt(start.Add(time.Second)), false},
		{"not a UUIDv7", []ledger.Run{self, live}, "not-an-id", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BornBeside(tc.runs, "self", "/h")(tc.id); got != tc.want {
				t.Errorf("BornBeside(%s) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

func TestHookFromItsRunsCodex(t *testing.T) {
	// This test process plays the hook; its parent plays the run's Codex.
	parent := os.Getppid()
	st, err := proc.ReadStat(parent)
	if err != nil || codex.IsHookShell(st.Comm) {
		t.Skipf("the parent is no Codex stand-in (%s): %v", st.Comm, err)
	}
	run := ledger.Run{CodexPID: parent, CodexStart: st.StartTime}
	if !HookFrom(run, parent) {
		t.Errorf("a hook whose parent is the run's Codex was not attributed")
	}
	run.CodexStart++ // the pid reused by another process
	if HookFrom(run, parent) {
		t.Errorf("a hook whose parent only shares the Codex's pid was attributed")
	}
}
