package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/testing/codextest"
)

// benchExecVar runs TestBenchExecRuns (make bench): a figure.
const benchExecVar = "CX_BENCH_EXEC"

// TestBenchExecRuns measures what a run costs cx beside its Codex, the
// chaos run's cx/Codex without its faults: `cx exec` runs, CX_BENCH_EXEC_AT
// (4) at once, CX_BENCH_EXEC_RUNS (16) of them, in one Codex home and
// CX_HOME with cx's hooks, on each installed Codex and the mock model. It
// prints, from cx's own lines (as the chaos run reads them), each run's
// wrapper CPU, its hooks' and the hook host's, and Codex's, for this build
// and the cx at CX_BENCH_BASELINE_CX, rounds alternated; it fails unless
// every run of this build committed its session once.
func TestBenchExecRuns(t *testing.T) {
	skipUnlessBench(t, benchExecVar)
	runs, at, rounds := envInt("CX_BENCH_EXEC_RUNS", 16), envInt("CX_BENCH_EXEC_AT", 4), envInt("CX_BENCH_ROUNDS", 2)
	builds := benchBuilds()
	for _, in := range codextest.Installs(t) {
		var report strings.Builder
		fmt.Fprintf(&report, "\n`cx exec` × %d, %d at once, Codex %s (per run, ms):", runs, at, in.Version)
		fmt.Fprintf(&report, "\n%-10s %9s %9s %9s %9s %9s %9s", "build", "wrapper", "hooks", "host", "MCP", "Codex", "cx/Codex")
		for round := 0; round < rounds; round++ {
			for i := range builds {
				b := builds[(i+round)%len(builds)]
				c := execRuns(t, in, b.name, b.cx, runs, at)
				per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(runs) }
				cx := c.wrapper + c.hookCPU + c.sweepCPU + c.mcpCPU
				codex := c.codex - c.hookCPU - c.mcpCPU
				fmt.Fprintf(&report, "\n%-10s %9.1f %9.1f %9.1f %9.1f %9.1f %9.3f", b.name, per(c.wrapper), per(c.hookCPU), per(c.sweepCPU), per(c.mcpCPU), per(codex), float64(cx)/float64(max(codex, 1)))
			}
		}
		t.Logf("exec runs:%s", report.String())
	}
}

// skipUnlessBench skips a benchmark written as a test unless its variable
// is set (make bench sets each).
func skipUnlessBench(t *testing.T, variable string) {
	t.Helper()
	if os.Getenv(variable) == "" {
		t.Skip("a benchmark: " + variable + "=1 (make bench)")
	}
}

// benchBuild is a cx a benchmark runs: this build's ("" cx) or BASE's.
type benchBuild struct{ name, cx string }

// benchBuilds is this build and, with CX_BENCH_BASELINE_CX, BASE's.
func benchBuilds() []benchBuild {
	builds := []benchBuild{{"this build", ""}}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		builds = append(builds, benchBuild{"BASE", base})
	}
	return builds
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// execRuns runs n `cx exec` (this build's, or the one at cx, named name), at at once,
// in one fresh environment, waits for its hook host to leave, and reads
// the CPU cx's lines report.
func execRuns(t *testing.T, in codextest.Install, name, cx string, n, at int) cpuSplit {
	t.Helper()
	h := New(t, in, Options{NoHooks: true})
	if cx != "" {
		h.CX = cx
	}
	h.InstallHooks() // as that build installs them
	var wg sync.WaitGroup
	sem := make(chan struct{}, at)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			prompt := fmt.Sprintf("run %d of the bench", i)
			out, errOut, code := h.Exec("", "exec", "--skip-git-repo-check", prompt)
			if code != 0 || !strings.Contains(out, "mock reply: "+prompt) {
				t.Errorf("cx exec %d: exit %d\nstdout %s\nstderr %s", i, code, out, errOut)
			}
		}()
	}
	wg.Wait()
	// The hook host logs its CPU as it leaves: stop it so its line is there.
	h.CXCtl("ctl", "sweep")
	hookwire.StopHost(h.CXHome, 10*time.Second)
	c := readCPUSplit(h.CXHome)
	if c.runs != n {
		t.Errorf("%s: %d runs logged their CPU, want %d", name, c.runs, n)
	}
	if cx == "" { // BASE's figures stand beside, whatever it did
		committedOnce(t, h)
	}
	return c
}
