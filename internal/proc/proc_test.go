package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// apartEnv, set, makes this test binary the process StartApart starts: it
// writes its parent and process group to the file named, and leaves.
const apartEnv = "CX_PROC_TEST_APART"

func TestMain(m *testing.M) {
	if f := os.Getenv(apartEnv); f != "" {
		_ = os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d", os.Getppid(), syscall.Getpgrp()), 0o600)
		_ = os.Rename(f+".tmp", f)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// What StartApart starts is no child of the caller's (nothing is left for
// it to reap) and out of its process group (a signal to the group does
// not reach it).
func TestStartApart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "apart")
	t.Setenv(apartEnv, out)
	if err := StartApart("-test.run=^$"); err != nil {
		t.Fatal(err)
	}
	var data []byte
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if data, err = os.ReadFile(out); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the process started did not run: %v", err)
		}
	}
	var ppid, pgid int
	if _, err := fmt.Sscan(string(data), &ppid, &pgid); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	if ppid == os.Getpid() {
		t.Errorf("its parent is the caller (%d)", ppid)
	}
	if pgid == syscall.Getpgrp() {
		t.Errorf("it is in the caller's process group (%d)", pgid)
	}
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Errorf("the caller has a child left (%d, %v): want none", pid, err)
	}
}

func TestParseStat(t *testing.T) {
	s := "4242 (weird ) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"
	st, err := parseStat(4242, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != "weird ) name" || st.State != 'S' || st.PPID != 17 || st.StartTime != 987654 {
		t.Fatalf("%+v", st)
	}
	if st.CPUTicks != 3 { // utime 1 + stime 2
		t.Fatalf("CPU ticks %d, want 3", st.CPUTicks)
	}
	if _, err := parseStat(1, "garbage"); err == nil {
		t.Fatal("parsed garbage")
	}
}

func TestSelfAndChild(t *testing.T) {
	me := os.Getpid()
	if !Alive(me, StartTime(me)) || Alive(me, StartTime(me)+1) {
		t.Fatal("Alive does not check the start time")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	anc := slices.Collect(Ancestors(cmd.Process.Pid, 2))
	if len(anc) != 2 || anc[1].PID != me || anc[0].Comm != "sleep" {
		t.Fatalf("ancestors %+v", anc)
	}
	f, _ := os.CreateTemp(t.TempDir(), "open")
	defer f.Close()
	found := false
	for _, p := range OpenFiles(me) {
		found = found || p == f.Name()
	}
	if !found {
		t.Fatal("own open file not listed")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(cmd.Process.Pid, 0) {
		t.Fatal("reaped child alive")
	}
}

func TestSelfCPU(t *testing.T) {
	before := SelfCPU()
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	if after := SelfCPU(); after <= before {
		t.Fatalf("CPU did not grow over 50 ms of spinning: %v then %v", before, after)
	}
}

// A process's own command line, as Args reads it (both platforms' way).
func TestArgsOfSelf(t *testing.T) {
	args := Args(os.Getpid())
	if len(args) != len(os.Args) || args[0] != os.Args[0] {
		t.Fatalf("Args(self) = %q, want %q", args, os.Args)
	}
	if Args(-1) != nil {
		t.Error("Args of no process is not nil")
	}
}
