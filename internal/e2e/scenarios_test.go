package e2e

import (
	"os"
	"slices"
	"testing"
	"time"

	"cx/internal/codextest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

// eachCodex runs f as a parallel subtest per installed Codex version.
func eachCodex(t *testing.T, f func(t *testing.T, in codextest.Install)) {
	t.Helper()
	for _, in := range codextest.Installs(t) {
		t.Run(in.Version, func(t *testing.T) {
			t.Parallel()
			f(t, in)
		})
	}
}

// checkTerminal is scenario 8: the terminal is exactly as it was.
func checkTerminal(t *testing.T, tu *TUI) {
	t.Helper()
	before, after := tu.Stty()
	if before != after {
		t.Fatalf("terminal settings changed:\nbefore %s\nafter  %s", before, after)
	}
}

func hasEvent(evs []HookEvent, name string) bool {
	return slices.ContainsFunc(evs, func(e HookEvent) bool { return e.Event == name })
}

// Scenario 1: start, one turn, /exit — exit 0, a rollout, Stop seen.
func TestScenarioExit(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("hello from the harness", "mock reply: hello from the harness")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d; screen:\n%s", code, tu.Screen())
		}
		checkTerminal(t, tu)
		if len(h.Rollouts()) != 1 {
			t.Fatalf("rollouts %v", h.Rollouts())
		}
		evs := h.HookEvents()
		if !hasEvent(evs, "Stop") {
			t.Fatalf("no Stop hook; events %v", EventNames(evs))
		}
		t.Logf("hooks: %v", EventNames(evs))
	})
}
