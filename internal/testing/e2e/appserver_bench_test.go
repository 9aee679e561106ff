package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
// committed once with its 5 turns.
func TestBenchAppServerThreads(t *testing.T) {
	if os.Getenv(benchAppServerVar) == "" {
		t.Skip("a benchmark: " + benchAppServerVar + "=1 (make bench)")
	}
	ins := codextest.Installs(t)
	in := ins[len(ins)-1]
	for _, v := range ins {
		if v.Version > in.Version {
			in = v
		}
	}
	threads := 16
	if n, err := strconv.Atoi(os.Getenv("CX_BENCH_THREADS")); err == nil && n > 0 {
		threads = n
	}
	builds := []struct{ name, cx string }{{"this build", ""}}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		builds = append(builds, struct{ name, cx string }{"BASE", base})
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n`cx app-server`, %d threads at once, 5 turns each, Codex %s:", threads, in.Version)
	fmt.Fprintf(&report, "\n%-10s %8s %9s %9s %9s %10s %10s %12s %12s", "build", "hooks/s", "p50 ms", "p99 ms", "max ms", "CPU/hook", "host/hook", "cx run CPU", "Codex CPU")
	for round := 0; round < 2; round++ {
		for _, b := range builds {
			r := appServerThreads(t, in, b.cx, threads)
			fmt.Fprintf(&report, "\n%-10s %8.0f %9.1f %9.1f %9.1f %7.1f ms %7.1f ms %9.0f ms %9.0f ms", b.name, r.rate, r.p50, r.p99, r.max, r.cpu, r.host, r.cxRun, r.codex)
		}
	}
	t.Logf("app-server threads at once:%s", report.String())
}

type appServerFigures struct{ rate, p50, p99, max, cpu, host, cxRun, codex float64 }

// appServerThreads runs one `cx app-server` (this build's, or the one at
// cx) with n threads at once.
func appServerThreads(t *testing.T, in codextest.Install, cx string, n int) appServerFigures {
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
	d := newDaemonClient(stdin, stdout)
	start := time.Now()
	if _, err := d.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "zouk-daemon-bench", "version": "1"}}); err != nil {
		t.Fatal(err)
	}
	d.send(map[string]any{"method": "initialized"})
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
				done := d.completed(id)
				if _, err := d.call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": fmt.Sprintf("thread %d asks for change %d of the parser", i, k)}}}); err != nil {
					errs <- fmt.Errorf("turn/start %s: %v", id, err)
					return
				}
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
					errs <- fmt.Errorf("thread %s: turn %d did not complete", id, k)
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
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("cx app-server did not exit after its stdin closed")
	}
	wall := time.Since(start)
	host := 0.0
	for _, pid := range cxOf(h.CXHome) {
		host += procCPU(pid)
	}
	// Each thread committed once with its turns, as that build's cx
	// lists it (committedOnce would hold BASE to this build's checkpoints).
	states := h.Sessions()
	if ids := h.RolloutSessionIDs(); len(ids) != n || len(states) != n {
		t.Fatalf("%d rollouts, %d sessions, want %d threads: %+v", len(ids), len(states), n, states)
	}
	for id, st := range states {
		if st.Status != "committed" || st.Generation != 1 || st.Commits != 1 || st.TotalTurns != 5 {
			t.Errorf("session %s: %+v, want one generation committed once with 5 turns", id, st)
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
		cpu: (cpu + host) / hooks, host: host / hooks, cxRun: float64(split.wrapper.Milliseconds()), codex: float64((split.codex - split.hookCPU).Milliseconds())}
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

// daemonClient is a daemon's JSON-RPC over `cx app-server`'s stdio, safe
// for many threads' goroutines at once: answers by id, each thread's
// turn/completed by thread.
type daemonClient struct {
	mu      sync.Mutex
	in      io.Writer
	nextID  int
	answers map[float64]chan map[string]any
	waiting map[string]chan struct{}
}

func newDaemonClient(in io.Writer, out io.Reader) *daemonClient {
	d := &daemonClient{in: in, answers: map[float64]chan map[string]any{}, waiting: map[string]chan struct{}{}}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			d.mu.Lock()
			if id, ok := m["id"].(float64); ok && m["method"] == nil {
				if ch := d.answers[id]; ch != nil {
					ch <- m
					delete(d.answers, id)
				}
			} else if m["method"] == "turn/completed" {
				p, _ := m["params"].(map[string]any)
				if th, _ := p["threadId"].(string); d.waiting[th] != nil {
					close(d.waiting[th])
					delete(d.waiting, th)
				}
			}
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *daemonClient) send(msg map[string]any) {
	b, _ := json.Marshal(msg)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.in.Write(append(b, '\n'))
}

// completed is closed at thread's next turn/completed (asked before the
// turn starts, so it cannot be missed).
func (d *daemonClient) completed(thread string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := make(chan struct{})
	d.waiting[thread] = ch
	return ch
}

func (d *daemonClient) call(method string, params map[string]any) (map[string]any, error) {
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan map[string]any, 1)
	d.answers[float64(id)] = ch
	d.mu.Unlock()
	d.send(map[string]any{"id": id, "method": method, "params": params})
	select {
	case m := <-ch:
		if m["error"] != nil {
			return nil, fmt.Errorf("%s: %v", method, m["error"])
		}
		res, _ := m["result"].(map[string]any)
		return res, nil
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s: no answer in a minute", method)
	}
}
