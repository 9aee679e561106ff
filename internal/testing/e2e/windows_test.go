package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// Codex started without cx, side by side (issue 51): two and three plain
// `codex exec` at once, each its own process with cx's hooks; none ends
// another's session as `new`: each is one generation, committed once.
func TestPlainCodexSideBySide(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				h := New(t, in, Options{})
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						// Each turn outlasts the others' starts.
						_, errOut, code := h.Direct("", "exec", fmt.Sprintf("window %d of %d: list the files [[slow: 3s]] [[shell: echo window %d]]", i+1, n, i+1))
						if code != 0 {
							t.Errorf("window %d: exit %d: %s", i+1, code, errOut)
						}
					}()
					time.Sleep(300 * time.Millisecond)
				}
				wg.Wait()
				checkOneEach(t, h, n)
			})
		}
	})
}

// Two plain TUIs at once (0.171: each window's thread in Codex's own
// background daemon): neither ends the other; after /exit the daemon keeps
// the threads (no SessionEnd); once Codex lets go of them — the daemon
// gone, their writer locks released — cx ends their sessions within a
// minute, not after the idle TTL.
func TestPlainTUIsSideBySide(t *testing.T) {
	withStructure(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		a := h.StartDirectTUI()
		a.WaitReady()
		b := h.StartDirectTUI()
		b.WaitReady()
		a.Prompt("first window: look at the parser", "mock reply: first window")
		b.Prompt("second window: look at the lexer", "mock reply: second window")
		a.Prompt("first window again", "mock reply: first window again")
		ids := h.RolloutSessionIDs()
		if len(ids) != 2 {
			t.Fatalf("sessions %v, want one per window", ids)
		}
		for _, id := range ids {
			if s := h.Sessions()[id]; s.Status != "live" || s.Generation != 1 {
				t.Errorf("with both windows open, %s: %+v", id, s)
			}
		}
		a.Slash("/exit")
		b.Slash("/exit")
		time.Sleep(3 * time.Second)
		for _, id := range ids {
			if s := h.Sessions()[id]; s.Status != "live" {
				t.Fatalf("%s ended at /exit (%s): Codex's daemon was expected to keep it", id, s.EndReason)
			}
		}
		daemons := codexProcesses(h)
		if len(daemons) == 0 {
			t.Fatal("no Codex daemon holds the threads after /exit")
		}
		for _, pid := range daemons {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		let := time.Now()
		deadline := let.Add(90 * time.Second)
		for {
			ended := 0
			for _, id := range ids {
				if s := h.Sessions()[id]; s.Status != "live" {
					ended++
				}
			}
			if ended == len(ids) {
				t.Logf("both sessions ended %s after Codex's daemon was gone", time.Since(let).Round(time.Second))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sessions still live %s after Codex let go: %s", time.Since(let).Round(time.Second), h.CXCtl("ctl", "sessions"))
			}
			time.Sleep(time.Second)
		}
		if d := time.Since(let); d > 65*time.Second {
			t.Errorf("the sessions ended %s after Codex let go, want within a minute", d.Round(time.Second))
		}
		checkOneEach(t, h, 2)
	})
}

// checkOneEach holds that each of the n rollouts' sessions is one
// generation, never ended as `new`, and (ended now if still live, as a
// Codex without SessionEnd leaves it) committed once.
func checkOneEach(t *testing.T, h *H, n int) {
	t.Helper()
	ids := h.RolloutSessionIDs()
	if len(ids) != n {
		t.Fatalf("sessions %v, want %d", ids, n)
	}
	for _, id := range ids {
		s := h.Sessions()[id]
		if s.EndReason == "new" || s.Generation != 1 {
			t.Errorf("%s was ended by another Codex's start: %+v", id, s)
		}
		if s.Status == "live" {
			h.CXCtl("ctl", "commit", id)
		}
	}
	h.CXCtl("ctl", "sweep")
	for _, id := range ids {
		if s := h.Sessions()[id]; s.Status != "committed" || s.Commits != 1 || s.Generation != 1 || s.EndReason == "new" {
			t.Errorf("%s: %+v, want one generation committed once", id, s)
		}
	}
}

// codexProcesses is the Codex processes of this test's harness still
// running (its background daemon), known by their CODEX_HOME.
func codexProcesses(h *H) []int {
	var pids []int
	for _, pid := range cxOf(h.CXHome) {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if strings.TrimSpace(string(comm)) == "codex" && bytes.Contains(environ, []byte("CODEX_HOME="+h.CodexHome+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
