package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// benchAppServerVar runs TestBenchAppServerThreads (make bench): a figure,
// not a check of every run.
const benchAppServerVar = "CX_BENCH_APPSERVER"

// TestBenchAppServerThreads is the third way Codex meets cx in the
// sessions-at-once bench (lifecycle's BenchmarkSessionsAtOnce has the other
// two): one `cx app-server`, as a daemon runs it, with 16 threads at once on
// real Codex (the newest installed) and the mock model, each thread 5 turns
// started as soon as the last completed, then stdin closed. It prints
// hooks a second (the hooks over the wall time), each hook's p50, p99 and
// max (its audit's took_ms: its process's start to its answer), its CPU
// (the hook's own, or its client's and its share of the hook host's) and
// the app-server cx's own CPU beside its Codex's (its hooks taken out),
// for this build and the cx
// at CX_BENCH_BASELINE_CX, alternated; and it fails unless every thread was
// committed once with its 5 turns. CX_BENCH_WORDS=n makes each answer n
// words long, streamed a word at a time as a model streams (a delta frame
// a word through the wrapper).
func TestBenchAppServerThreads(t *testing.T) {
	skipUnlessBench(t, benchAppServerVar)
	ins := codextest.Installs(t)
	in := ins[len(ins)-1]
	for _, v := range ins {
		if v.Version > in.Version {
			in = v
		}
	}
	threads := envInt("CX_BENCH_THREADS", 16)
	words := envInt("CX_BENCH_WORDS", 0)
	builds := benchBuilds()
	var report strings.Builder
	fmt.Fprintf(&report, "\n`cx app-server`, %d threads at once, 5 turns each, Codex %s:", threads, in.Version)
	if words > 0 {
		fmt.Fprintf(&report, " each answer %d words, streamed a word at a time", words)
	}
	fmt.Fprintf(&report, "\n%-10s %8s %9s %9s %9s %10s %10s %12s %12s", "build", "hooks/s", "p50 ms", "p99 ms", "max ms", "CPU/hook", "host/hook", "cx run CPU", "Codex CPU")
	for round := 0; round < 2; round++ {
		for _, b := range builds {
			r := appServerThreads(t, in, b.cx, threads, words)
			fmt.Fprintf(&report, "\n%-10s %8.0f %9.1f %9.1f %9.1f %7.1f ms %7.1f ms %9.0f ms %9.0f ms", b.name, r.rate, r.p50, r.p99, r.max, r.cpu, r.host, r.cxRun, r.codex)
		}
	}
	t.Logf("app-server threads at once:%s", report.String())
}

type appServerFigures struct{ rate, p50, p99, max, cpu, host, cxRun, codex float64 }

// appServerThreads runs one `cx app-server` (this build's, or the one at
// cx) with n threads at once, each answer words long (0: a short one),
// streamed a word at a time.
func appServerThreads(t *testing.T, in codextest.Install, cx string, n, words int) appServerFigures {
	t.Helper()
	h := New(t, in, Options{NoHooks: true})
	if cx != "" {
		h.CX = cx
	}
	h.InstallHooks() // as that build installs them
	cmd := exec.Command(h.CX, "app-server", "-c", "thread_unload_delay_secs=1")
	cmd.Dir = h.Work
	cmd.Env = h.Env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := newDaemonConn(stdin)
	go func() { d.read(stdout); _ = cmd.Wait(); close(d.exited) }()
	start := time.Now()
	if _, err := d.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "zouk-daemon-bench", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	_ = d.send(map[string]any{"method": "initialized"})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := d.call("thread/start", map[string]any{"cwd": h.Work})
			th, _ := res["thread"].(map[string]any)
			id, _ := th["id"].(string)
			if err != nil || id == "" {
				errs <- fmt.Errorf("thread/start: %v %v", res, err)
				return
			}
			for k := 1; k <= 5; k++ {
				prompt := fmt.Sprintf("thread %d asks for change %d of the parser", i, k)
				if words > 0 {
					prompt += fmt.Sprintf(" [[words: %d]]", words)
				}
				if err := d.turn(id, prompt); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	stdin.Close() // the daemon is done: cx ends its threads and commits them
	select {
	case <-d.exited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("cx app-server did not exit after its stdin closed")
	}
	wall := time.Since(start)
	host := 0.0
	for _, pid := range cxOf(h.CXHome) {
		host += procCPU(pid)
	}
	// Each thread committed once with its turns, as that build's cx
	// lists it (committedOnce would hold BASE to this build's checkpoints).
	// A commit may still be under way in the hook host as cx exits: waited
	// for, as committedOnce waits.
	states := h.Sessions()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); states = h.Sessions() {
		if !slices.ContainsFunc(slices.Collect(maps.Values(states)), func(st SessionState) bool { return st.Status != "committed" }) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ids := h.RolloutSessionIDs(); len(ids) != n || len(states) != n {
		t.Fatalf("%d rollouts, %d sessions, want %d threads: %+v", len(ids), len(states), n, states)
	}
	for id, st := range states {
		if st.Status != "committed" || st.Generation != 1 || st.Commits != 1 || st.TotalTurns != 5 {
			t.Errorf("cx %q: session %s: %+v, want one generation committed once with 5 turns", h.CX, id, st)
		}
	}
	var took []float64
	cpu := 0.0
	eachLine(filepath.Join(h.CXHome, "logs"), "hook-events.jsonl", func(line string) {
		var ev struct {
			Took      float64  `json:"took_ms"`
			CPU       *float64 `json:"cpu_ms"`
			ClientCPU *float64 `json:"client_cpu_ms"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			took = append(took, ev.Took)
			for _, c := range []*float64{ev.CPU, ev.ClientCPU} {
				if c != nil {
					cpu += *c
				}
			}
		}
	})
	if len(took) == 0 {
		t.Fatal("no hook was audited")
	}
	slices.Sort(took)
	at := func(q float64) float64 { return took[min(len(took)-1, int(q*float64(len(took))))] }
	split := readCPUSplit(h.CXHome)
	hooks := float64(len(took))
	return appServerFigures{rate: hooks / wall.Seconds(), p50: at(0.5), p99: at(0.99), max: took[len(took)-1],
		cpu: (cpu + host) / hooks, host: host / hooks, cxRun: float64(split.wrapper.Milliseconds()), codex: float64((split.codex - split.hookCPU - split.mcpCPU).Milliseconds())}
}

// procCPU is a process's user + system CPU so far, in milliseconds.
func procCPU(pid int) float64 {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) * 1000 / 100 // clock ticks (USER_HZ 100)
}
