package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
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
		// The shell has its job back (a TUI's leftovers may share the
		// prompt's row, so its status line is what is waited for).
		tu.WaitText("cx-exit=137", 20*time.Second)
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
