package wrapper

import (
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// startGroup starts a shell script as the leader of a process group of its
// own, reaped in the background; it returns the pid and a channel closed
// when the script has ended.
func startGroup(t *testing.T, script string) (int, <-chan struct{}) {
	t.Helper()
	c := exec.Command("/bin/sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-done })
	return c.Process.Pid, done
}

// awaitIgnored waits until process pid ignores every one of sigs (a
// shell's trap has run), from Linux's SigIgn mask; where there is none,
// it waits a second.
func awaitIgnored(t *testing.T, pid int, sigs ...syscall.Signal) {
	t.Helper()
	var want uint64
	for _, s := range sigs {
		want |= 1 << (uint(s) - 1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		v, ok := codextest.StatusField(pid, "SigIgn:")
		if !ok {
			time.Sleep(time.Second)
			return
		}
		if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&want == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d does not ignore %v after 10s", pid, sigs)
}

func gone(t *testing.T, done <-chan struct{}, within time.Duration) bool {
	t.Helper()
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

func TestWatchman(t *testing.T) {
	t.Parallel()
	// The polite stop: a group that takes SIGTERM ends at once, well
	// before the grace.
	t.Run("supervisor gone: SIGTERM", func(t *testing.T) {
		t.Parallel()
		pid, done := startGroup(t, "sleep 60")
		m := startWatchman(pid, 30*time.Second, 0, nil)
		if err := m.wait(); err != nil {
			t.Fatal(err)
		}
		m.lifeline.Close() // as the kernel does when the supervisor dies
		if !gone(t, done, 10*time.Second) {
			t.Fatal("group still there 10s after the lifeline closed")
		}
	})
	// A group that ignores SIGTERM is killed when the grace ends.
	t.Run("supervisor gone: SIGKILL after grace", func(t *testing.T) {
		t.Parallel()
		pid, done := startGroup(t, "trap '' TERM; while :; do sleep 0.05; done")
		m := startWatchman(pid, 700*time.Millisecond, 0, nil)
		if err := m.wait(); err != nil {
			t.Fatal(err)
		}
		awaitIgnored(t, pid, syscall.SIGTERM)
		m.lifeline.Close()
		if gone(t, done, 300*time.Millisecond) {
			t.Fatal("group gone before the grace ended: SIGTERM was not ignored, or SIGKILL came early")
		}
		if !gone(t, done, 10*time.Second) {
			t.Fatal("group still there 10s after the grace")
		}
	})
	// Released, the watchman ends and leaves the group alone.
	t.Run("released", func(t *testing.T) {
		t.Parallel()
		pid, done := startGroup(t, "sleep 60")
		m := startWatchman(pid, 100*time.Millisecond, 0, nil)
		if err := m.wait(); err != nil {
			t.Fatal(err)
		}
		m.release()
		// startWatchman's reaper waits for it: once reaped, its pid is gone.
		deadline := time.Now().Add(10 * time.Second)
		for syscall.Kill(m.cmd.Process.Pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(m.cmd.Process.Pid, 0) == nil {
			t.Fatal("watchman still running 10s after release")
		}
		if gone(t, done, 500*time.Millisecond) {
			t.Fatal("the released watchman stopped the group")
		}
	})
	// Released before its delay, it never starts.
	t.Run("released early", func(t *testing.T) {
		t.Parallel()
		pid, done := startGroup(t, "sleep 60")
		m := startWatchman(pid, 100*time.Millisecond, time.Hour, nil)
		m.release()
		select {
		case <-m.started:
			t.Fatal("a watchman released before its delay started")
		case <-time.After(200 * time.Millisecond):
		}
		if gone(t, done, 10*time.Millisecond) {
			t.Fatal("the group is gone")
		}
	})
	// The terminal's signals (a Ctrl+C to cx's group, a hangup) do not end
	// the watchman: it still stops the group when the lifeline closes.
	t.Run("ignores the terminal's signals", func(t *testing.T) {
		t.Parallel()
		pid, done := startGroup(t, "sleep 60")
		m := startWatchman(pid, 30*time.Second, 0, nil)
		if err := m.wait(); err != nil {
			t.Fatal(err)
		}
		awaitIgnored(t, m.cmd.Process.Pid, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
			_ = syscall.Kill(-m.cmd.Process.Pid, sig)
		}
		time.Sleep(100 * time.Millisecond)
		m.lifeline.Close()
		if !gone(t, done, 10*time.Second) {
			t.Fatal("group still there 10s after the lifeline closed")
		}
	})
}
