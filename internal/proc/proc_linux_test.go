package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A process the kernel has not finished killing (a thread in D state holds
// it) is not running: a SIGKILL pending for it or its thread group, or
// its exit begun.
func TestBeingKilledIsNotRunning(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"Name:\tcx\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n", true},
		{"Name:\tcx\nSigPnd:\t0000000000000100\nShdPnd:\t0000000000000000\n", true},
		{"Name:\tcx\nSigPnd:\t0000000000004002\nShdPnd:\t0000000000000000\n", false}, // SIGHUP, SIGTERM: not a kill
		{"Name:\tcx\n", false},
	} {
		if got := killPendingIn(tc.status); got != tc.want {
			t.Errorf("killPendingIn(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
	line := "123 (cx) D 1 123 123 0 -1 4194564 0 0 0 0 5 3 0 0 20 0 1 0 4242 0 0"
	st, err := parseStat(123, line)
	if err != nil || !st.Exiting || st.StartTime != 4242 {
		t.Fatalf("flags with PF_EXITING: %+v, %v", st, err)
	}
	if Alive(os.Getpid(), 0) != true {
		t.Fatal("this process is not alive")
	}
}

// BenchmarkOpenFiles lists the open files of a process with 100 files and
// 20 pipes open (a Codex holds its databases, logs, sockets and pipes):
// discovery does on every look at a run's Codex.
func BenchmarkOpenFiles(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("open-%03d", i)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
	}
	for range 20 {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
	}
	me := os.Getpid()
	if n := len(OpenFiles(me)); n < 100 {
		b.Fatalf("%d open files listed", n)
	}
	b.ResetTimer()
	for range b.N {
		OpenFiles(me)
	}
}
