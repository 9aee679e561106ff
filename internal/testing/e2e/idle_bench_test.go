package e2e

import (
	"os"
	"strconv"
	"testing"
	"time"

	"cx/internal/proc"
	"cx/internal/testing/codextest"
)

// BenchmarkIdleCPU: the real Codex TUI through cx, one turn done, then idle
// at its prompt for CX_BENCH_IDLE_SECONDS (default 60): the CPU ticks
// (utime+stime, 1/100 s) cx used — the supervisor and its session leader —
// beside Codex's own in the same window, and cx's RSS. Goal (issue 14):
// cx's ticks ≤ Codex's, RSS < 20 MiB.
func BenchmarkIdleCPU(b *testing.B) {
	secs := 60
	if n, err := strconv.Atoi(os.Getenv("CX_BENCH_IDLE_SECONDS")); err == nil && n > 0 {
		secs = n
	}
	for _, in := range codextest.Installs(b) {
		b.Run(in.Version, func(b *testing.B) {
			h := New(b, in, Options{})
			tu := h.StartTUI()
			defer tu.Close()
			tu.WaitReady()
			tu.Prompt("hello idle", "mock reply: hello idle")
			cx, codex := tu.CXPid(), tu.CodexPid()
			leader := 0
			if cs := RunChildren(cx); len(cs) > 0 && cs[0] != codex {
				leader = cs[0]
			}
			time.Sleep(3 * time.Second) // the turn's own work settles
			cx0, l0, c0 := ticks(b, cx), ticks(b, leader), ticks(b, codex)
			time.Sleep(time.Duration(secs) * time.Second)
			cxT, cT := ticks(b, cx)-cx0+ticks(b, leader)-l0, ticks(b, codex)-c0
			b.ReportMetric(float64(cxT), "cx-ticks")
			b.ReportMetric(float64(cT), "codex-ticks")
			b.ReportMetric(float64(secs), "seconds")
			b.ReportMetric(float64(codextest.StatusKB(cx, "VmRSS:"))/(1<<20), "cx-RSS-MiB")
		})
	}
}

// ticks is a process's CPU time so far, in clock ticks (0 for pid 0).
func ticks(b *testing.B, pid int) int64 {
	if pid == 0 {
		return 0
	}
	st, err := proc.ReadStat(pid)
	if err != nil {
		b.Fatalf("pid %d: %v", pid, err)
	}
	return int64(st.CPUTicks)
}
