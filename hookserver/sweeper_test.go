package hookserver

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/ledger"
)

// The sweep lock a hook client hands the host it starts (descriptor 3,
// inherited across exec) stays the host's alone: a child the host starts
// (an exec sink's command, which may hang) must not inherit it, or the
// lock outlives a host that is killed, no host can start again, and every
// hook is answered in its own process until that child ends (seen in the
// chaos run: 100-odd hooks "unreachable" after a sweeper SIGKILL beside a
// hanging exec sink).
func TestHandedSweepLockIsNotInherited(t *testing.T) {
	home := t.TempDir()
	lock := hookwire.TakeSweepLock(home)
	if lock == nil {
		t.Fatal("could not take the sweep lock")
	}
	fd := int(lock.Fd())
	// As the host finds it: inherited across exec, so not close-on-exec.
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); e != 0 {
		t.Fatal(e)
	}
	t.Setenv(hookwire.LockFDEnv, strconv.Itoa(fd))
	unlock, err := takeSweepLock(home)
	if err != nil {
		t.Fatalf("the handed lock was not taken: %v", err)
	}
	defer unlock()
	child := exec.Command("sh", "-c", "test -e /dev/fd/"+strconv.Itoa(fd))
	child.Stderr = os.Stderr
	if err := child.Run(); err == nil {
		t.Fatalf("a child of the host has the sweep lock's descriptor %d", fd)
	} else if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("run the child: %v", err)
	}
}

// The loop looks every jobEvery while anything may be waiting on it, and
// backs off, doubling, to letGoEvery while it is quiet.
func TestNextTick(t *testing.T) {
	for _, c := range []struct {
		last  time.Duration
		quiet bool
		want  time.Duration
	}{
		{jobEvery, false, jobEvery},
		{8 * time.Second, false, jobEvery},
		{jobEvery, true, 2 * jobEvery},
		{0, true, 2 * jobEvery},
		{4 * time.Second, true, 8 * time.Second},
		{8 * time.Second, true, letGoEvery},
		{letGoEvery, true, letGoEvery},
	} {
		if got := nextTick(c.last, c.quiet); got != c.want {
			t.Errorf("nextTick(%v, quiet %v) = %v, want %v", c.last, c.quiet, got, c.want)
		}
	}
}

// Nothing waits on the loop while no run is live and no commit waits;
// a live run or a pending job is something.
func TestQuiet(t *testing.T) {
	ctx := context.Background()
	db, err := ledger.Open(ctx, t.TempDir(), ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !quiet(ctx, db) {
		t.Fatal("a fresh ledger is not quiet")
	}
	run := ledger.Run{ID: "run-live", PID: os.Getpid(), StartedAt: time.Now()}
	if err := db.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutRun(ctx, run) }); err != nil {
		t.Fatal(err)
	}
	if quiet(ctx, db) {
		t.Error("quiet while a run is live")
	}
	ended := time.Now()
	run.EndedAt = &ended
	if err := db.Tx(ctx, func(tx *ledger.Tx) error {
		if err := tx.PutRun(ctx, run); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, "commit", "s1", 1, "local")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if quiet(ctx, db) {
		t.Error("quiet while a commit waits")
	}
	if err := db.Tx(ctx, func(tx *ledger.Tx) error {
		j, err := tx.Job(ctx, 1)
		if err != nil {
			return err
		}
		j.State = ledger.JobDone
		return tx.UpdateJob(ctx, j)
	}); err != nil {
		t.Fatal(err)
	}
	if !quiet(ctx, db) {
		t.Error("not quiet once the run ended and its commit was done")
	}
}
