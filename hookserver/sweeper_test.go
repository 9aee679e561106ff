package hookserver

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/fsutil"
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

// A Codex cx launches has its host started beside it when none holds the
// place and cx's hooks run in it, apart from the run's cx; not when one
// does (the hooks' setting is not even asked then), nor when the hooks are
// off or not cx's.
func TestPrestart(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		name    string
		environ []string
		held    bool // a host (or sweeper) holds the place
		active  bool
		want    bool
		asked   bool
	}{
		{"none runs, hooks active", nil, false, true, true, true},
		{"none runs, hooks not cx's", nil, false, false, false, true},
		{"one runs", nil, true, true, false, false},
		{"hooks kept from the host", []string{hookwire.HostEnv + "=off"}, false, true, false, false},
		{"a test's fault point", []string{"CX_TEST_CRASH_AT=ended"}, false, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var started atomic.Int32
			startHost = func(apart bool) error {
				if !apart {
					t.Error("the host started as the run's child: want it apart (no zombie under a run's cx)")
				}
				started.Add(1)
				return nil
			}
			t.Cleanup(func() { startHost = startHostOf })
			if c.held {
				unlock, err := fsutil.Lock(hookwire.SweepLock(home), false)
				if err != nil {
					t.Fatal(err)
				}
				defer unlock()
			}
			asked := false
			got := Prestart(home, c.environ, func() bool { asked = true; return c.active })
			if got != c.want || (started.Load() == 1) != c.want || asked != c.asked {
				t.Fatalf("started %v (%d), hooks asked %v; want %v, asked %v", got, started.Load(), asked, c.want, c.asked)
			}
		})
	}
}

// A host started by a hook client closes the pipe it was handed once it
// listens: the client, woken by the close, finds the socket in place.
func TestHostSignalsReadyOnceListening(t *testing.T) {
	w := newHostWorld(t)
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		t.Fatal(err)
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd, err := syscall.Dup(int(pw.Fd())) // the host's to close, as across exec
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(hookwire.ReadyFDEnv, strconv.Itoa(fd))
	cfg, err := config.Load(env(w.vars))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- BackgroundSweep(context.Background(), cfg, true) }()
	_ = r.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the pipe: %v; want it closed by the host", err)
	}
	if fi, err := os.Lstat(hookwire.SocketPath(w.home)); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("closed before the host listened: %v", err)
	}
	if v, ok := os.LookupEnv(hookwire.ReadyFDEnv); ok {
		t.Errorf("%s=%s left for what the host starts", hookwire.ReadyFDEnv, v)
	}
	hookwire.StopHost(w.home, 10*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the host did not leave when asked")
	}
}

// A descriptor named that is no pipe (an environment copied by hand) is
// not taken: none of the process's files is closed for it.
func TestHandedReadyIsAPipe(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv(hookwire.ReadyFDEnv, strconv.Itoa(int(f.Fd())))
	if r := handedReady(); r != nil {
		t.Fatalf("took descriptor %d, a file, as the host's ready pipe", r.Fd())
	}
	if _, err := f.Stat(); err != nil {
		t.Fatalf("the file was closed: %v", err)
	}
}
