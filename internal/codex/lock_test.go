package codex

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// lockHolderVar makes the test binary flock the file it names, as Codex
// does its writer lock, say "locked", and wait to be killed.
const lockHolderVar = "CX_TEST_FLOCK_HOLDER"

func init() {
	if p := os.Getenv(lockHolderVar); p != "" {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(2)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// A writer lock flocked by another process is seen as held, and free again
// once that process is gone — asked of the kernel, never taken.
func TestThreadLockedByAnotherProcess(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, threadLocksDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "019a0000-0000-7000-8000-000000000001"
	holder := exec.Command(os.Args[0], "-test.run=^$")
	holder.Env = append(os.Environ(), lockHolderVar+"="+filepath.Join(dir, id+".lock"))
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(out).ReadString('\n'); line <- l }()
	select {
	case l := <-line:
		if l != "locked\n" {
			t.Fatalf("holder said %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the holder did not take the lock within 20s")
	}
	if pid, held := lockHolder(filepath.Join(dir, id+".lock")); !held || !ThreadLocked(home, id) {
		t.Fatal("a flocked writer lock is reported free")
	} else if runtime.GOOS == "linux" && pid != holder.Process.Pid {
		t.Fatalf("held by pid %d, want the holder's %d", pid, holder.Process.Pid)
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	// The kernel may let the lock go a moment after the process is gone.
	for deadline := time.Now().Add(5 * time.Second); ThreadLocked(home, id); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lock of a killed process is reported held 5s on")
		}
	}
}
