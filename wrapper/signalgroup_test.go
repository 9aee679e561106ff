package wrapper

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A pid that leads no process group is not signalled: Codex always leads
// its own, so such a pid is a stale one that may be another process's now
// (the stop path signalled it alone when the group was gone).
func TestSignalGroupSparesAPidLeadingNone(t *testing.T) {
	stranger := exec.Command("sleep", "30") // in this test's group, leading none
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stranger.Process.Kill(); _ = stranger.Wait() }()
	signalGroup(stranger.Process.Pid, syscall.SIGTERM)

	leader := exec.Command("sleep", "30")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	signalGroup(leader.Process.Pid, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- leader.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = leader.Process.Kill()
		t.Fatal("the group's leader was not signalled")
	}
	if err := stranger.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the pid leading no group was signalled: %v", err)
	}
	var ws syscall.WaitStatus
	if pid, _ := syscall.Wait4(stranger.Process.Pid, &ws, syscall.WNOHANG, nil); pid != 0 {
		t.Fatalf("the pid leading no group died: %v", ws)
	}
}
