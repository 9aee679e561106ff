package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

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
