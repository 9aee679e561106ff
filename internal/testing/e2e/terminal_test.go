package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// A cx SIGKILLed at a shell's prompt leaves the shell's line editing as
// the shell set it (issue: "after kill -9 of cx the shell's line editing is
// sometimes broken": 3 of 15 times bash sat in canonical mode with echo).
// cx's session leader gives the terminal back when cx dies, but only while
// it is still cx's raw mode: bash restores its own settings for a killed
// job and then sets up readline, and the later writer wins. With both
// cores busy, against an interactive bash in a real terminal: 30 times
// with a stand-in child that sleeps (what runs under cx does not change
// the terminal cx's leader hands back, and it starts in milliseconds), then
// 6 times with the real Codex TUI.
func TestKilledCxLeavesTheShellsTerminal(t *testing.T) {
	installs := codextest.Installs(t)
	h := New(t, installs[0], Options{NoHooks: true})
	child := filepath.Join(h.Root, "sleeper")
	if err := os.WriteFile(child, []byte("#!/bin/sh\ncase \"$1\" in --version) echo \"codex-cli "+installs[0].Version+"\"; exit 0;; esac\n"+
		"[ -t 0 ] || exit 0 # cx's probes of its Codex (on pipes) get nothing\necho sleeper-ready\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	realEnv := h.ExtraEnv
	h.ExtraEnv = append(append([]string(nil), realEnv...), "CX_CODEX_BIN="+child)
	// Both cores busy, as on the machine the issue was seen on.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched() // busy, but the test's own goroutines still run
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	broken, rounds := 0, 0
	round := func(ready func(*TUI)) {
		rounds++
		tu := h.StartInShell()
		ready(tu)
		tu.Signal(tu.CXPid(), syscall.SIGKILL)
		// The shell has its job back: its prompt after the command line (a
		// TUI's leftovers may share the prompt's row; what the shell printed
		// on Codex's alternate screen, its job's status, leaves with it).
		tu.WaitFor(promptAfterExit, 20*time.Second)
		// The leader acts when the lifeline breaks: give it the moment it
		// takes, then read the settings the shell is left with.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && len(Children(tu.CXPid())) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		ttyPath, err := tu.tmux("display-message", "-p", "-t", "cx", "#{pane_tty}")
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("stty", "-F", strings.TrimSpace(ttyPath), "-a").CombinedOutput()
		if err != nil {
			t.Fatalf("stty: %v\n%s", err, out)
		}
		fields := " " + strings.Join(strings.Fields(string(out)), " ") + " "
		if strings.Contains(fields, " icanon ") || strings.Contains(fields, " echo ") {
			broken++
			t.Logf("round %d: the shell's terminal is in canonical mode with echo: %s", rounds, fields)
		}
		tu.Close()
	}
	for i := 0; i < 30; i++ {
		round(func(tu *TUI) { tu.WaitText("sleeper-ready", 20*time.Second) })
	}
	h.ExtraEnv = realEnv // the real Codex TUI
	for i := 0; i < 6; i++ {
		round(func(tu *TUI) { tu.WaitReady() })
	}
	if broken > 0 {
		t.Fatalf("%d of %d rounds left the shell's line editing off", broken, rounds)
	}
}

// A cx SIGKILLed while the real Codex TUI runs leaves the terminal off
// Codex's screen: the alternate screen, the hidden cursor, focus reporting
// and the kitty keyboard flags Codex turned on are turned off by cx's
// session leader (issue: bash's prompt was drawn over Codex's UI). Read
// from tmux, the terminal program the shell runs in. A kill -TERM, where
// Codex leaves the terminal itself, is the baseline.
func TestKilledCxLeavesNoTerminalModes(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{NoHooks: true})
		state := func(tu *TUI) string {
			out, err := tu.tmux("display-message", "-p", "-t", "cx", "alternate=#{alternate_on} cursor=#{cursor_flag} mouse=#{mouse_any_flag}")
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(out)
		}
		// A shell quicker than cx's leader draws its prompt on Codex's
		// screen before the leader leaves it: the prompt must be in sight
		// all the same (the leader has the shell draw it again), in every
		// round.
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGKILL, syscall.SIGKILL, syscall.SIGKILL} {
			tu := h.StartInShell()
			tu.WaitReady()
			if s := state(tu); !strings.Contains(s, "alternate=1") {
				t.Logf("Codex %s is not on the alternate screen (%s): the check below proves less", in.Version, s)
			}
			tu.Signal(tu.CXPid(), sig)
			tu.WaitText("cx-exit=", 30*time.Second)
			// The leader acts once the lifeline breaks; give it a moment.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && state(tu) != "alternate=0 cursor=1 mouse=0" {
				time.Sleep(50 * time.Millisecond)
			}
			if s := state(tu); s != "alternate=0 cursor=1 mouse=0" {
				t.Errorf("after %v of cx the terminal is left %s; screen:\n%s", sig, s, tu.Screen())
			}
			tu.WaitFor(promptAfterExit, 5*time.Second)
			tu.Close()
		}
	})
}

// promptAfterExit is the shell's prompt in sight after the command line
// that ran cx (a Codex that draws inline, 0.128, may leave its UI beside
// it; what the shell printed on Codex's alternate screen before the
// leader left it, its job's status, is out of sight).
var promptAfterExit = regexp.MustCompile(`(?s)echo "cx-exit=\$\?"\n.*cx-shell\$`)
