package main

import (
	"cx/internal/tty"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"cx/internal/testing/codextest"
)

// A panic in cx's own bookkeeping — opening the ledger beside Codex, or
// ending the run's sessions after it — is logged with its stack, costs
// only the records (the rollout keeps the session), and leaves Codex's exit
// status and the user's terminal exactly as they would have been.
func TestSupervisorPanicLeavesTerminalAndStatus(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"supervise-open", "supervise-finish"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fake := fakeCodex(t, dir, "codex", false)
			home := t.TempDir()
			cxHome := filepath.Join(home, ".cx")
			master, slave, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer master.Close()
			defer slave.Close()
			go func() { _, _ = io.Copy(io.Discard, master) }()
			before, err := tty.Termios(slave.Fd())
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(codextest.CX(t), "hello")
			cmd.Env = []string{"HOME=" + home, "CX_HOME=" + cxHome, "PATH=/usr/bin:/bin", "CX_CODEX_BIN=" + fake,
				"FAKE_EXIT=3", "CX_TEST_PANIC_AT=" + point, "TERM=xterm"}
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("cx did not finish")
			}
			if code := cmd.ProcessState.ExitCode(); code != 3 {
				t.Fatalf("exit %d, want Codex's 3", code)
			}
			after, err := tty.Termios(slave.Fd())
			if err != nil {
				t.Fatal(err)
			}
			if *after != *before {
				t.Fatalf("terminal settings changed:\nbefore %+v\nafter  %+v", before, after)
			}
			log, _ := os.ReadFile(filepath.Join(cxHome, "logs", "cx.log"))
			if !strings.Contains(string(log), "panic: test panic at "+point) {
				t.Fatalf("cx.log has no panic:\n%s", log)
			}
		})
	}
}
