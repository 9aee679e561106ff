package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/readmodel"
)

// BenchmarkSessionsAtOnce is many Codex sessions beside each other, as an
// agent daemon or a person with several windows runs them, both ways Codex
// meets cx: started without cx (hooks only) and under cx (each session a
// `cx` run of its own, as `cx exec` is). Each session is its own fake
// Codex process that holds its thread's writer lock (as Codex 0.169+
// does) and plays SessionStart, 5 × (UserPromptSubmit, a turn appended to
// its rollout, Stop) and SessionEnd, every hook a process through
// hooks.json (as cx ctl install writes it); all at once on one CX_HOME,
// then a sweep. For 1, 4 and 16 sessions at once (CX_BENCH_SESSIONS: a
// comma list) it prints hooks a second (all hooks over the wall time),
// each hook's p50, p99 and max (its process, start to answer) and its CPU
// (user + sys), beside the same run of the cx at BASE
// (CX_BENCH_BASELINE_CX), alternated, and, hooks only, beside two floors
// (floorBuilds: what a hook that does nothing costs on this machine under
// the same load); and it fails unless every session
// was committed once (one generation) with its 5 turns. CX_BENCH_ROUNDS=k
// runs each row k times, the builds alternated, and pools their hooks: one
// round's p99 is its second slowest hook of 192, as noisy as a max (two
// rounds of one build were seen 224 and 502 ms apart); pooled, it is the
// 1% of k×192. The CX_HOME is one cx has run in before (its ledger made,
// Codex's version probed), where sessions run after the first;
// CX_BENCH_FRESH=1 makes it a new one, the first sessions ever.
func BenchmarkSessionsAtOnce(b *testing.B) {
	levels := []int{1, 4, 16}
	if s := os.Getenv("CX_BENCH_SESSIONS"); s != "" {
		levels = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("CX_BENCH_SESSIONS=%q: want a comma list of counts", s)
			}
			levels = append(levels, n)
		}
	}
	fresh := os.Getenv("CX_BENCH_FRESH") == "1"
	rounds := 1
	if s := os.Getenv("CX_BENCH_ROUNDS"); s != "" {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 {
			b.Fatalf("CX_BENCH_ROUNDS=%q: want a count", s)
		}
		rounds = k
	}
	builds := []benchBuild{{name: "this build"}}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		builds = append(builds, benchBuild{name: "BASE", cx: base})
	}
	builds = append(builds, floorBuilds(b)...)
	// Rounds outermost: every row samples the same stretch of the
	// machine's time (its speed drifts by half between stretches), so the
	// rows, the two ways included, compare within a run.
	ways := []bool{false, true}
	type row struct {
		under bool
		n     int
		build int
	}
	pooled := map[row]*hookRuns{}
	for round := 0; round < rounds; round++ {
		for _, under := range ways {
			for _, n := range levels {
				for k := range builds {
					i := k
					if round%2 == 1 {
						i = len(builds) - 1 - k // each build first as often: the one after meets what the one before left
					}
					if under && builds[i].floor != "" {
						continue // a floor is a hook alone: there is no cx to run under
					}
					r := row{under, n, i}
					if pooled[r] == nil {
						pooled[r] = &hookRuns{}
					}
					pooled[r].add(sessionsAtOnce(b, n, builds[i], under, fresh, nil))
				}
			}
		}
	}
	var report strings.Builder
	for _, under := range ways {
		way := "Codex started without cx (hooks only)"
		if under {
			way = "Codex under cx (a cx run each)"
		}
		home := "one CX_HOME cx has run in before"
		if fresh {
			home = "one new CX_HOME"
		}
		fmt.Fprintf(&report, "\n%s, hooks as processes, %s:", way, home)
		fmt.Fprintf(&report, "\n%-10s %-10s %8s %9s %9s %9s %10s %10s %10s", "sessions", "build", "hooks/s", "p50 ms", "p99 ms", "max ms", "CPU/hook", "host/hook", "all/hook")
		for _, n := range levels {
			for i, build := range builds {
				if pooled[row{under, n, i}] == nil {
					continue
				}
				r := pooled[row{under, n, i}].figures()
				fmt.Fprintf(&report, "\n%-10d %-10s %8.0f %9.1f %9.1f %9.1f %7.1f ms %7.1f ms %7.1f ms", n, build.name, r.rate, r.p50, r.p99, r.max, r.cpu, r.host, r.all)
				if build.cx == "" && build.floor == "" && !under {
					b.ReportMetric(r.p99, fmt.Sprintf("p99-ms-%d", n))
					b.ReportMetric(r.rate, fmt.Sprintf("hooks/s-%d", n))
				}
			}
		}
	}
	b.Logf("sessions at once:%s", report.String())
}

// atOnce is a row's figures: cpu is a hook's process (with the sh -c
// Codex wraps it in) plus its share of the hook host's (host); all is every
// process's CPU on the machine over the run, a hook's share (the fake
// Codex processes and background sweepers included, the same for both
// builds).
type atOnce struct{ rate, p50, p99, max, cpu, host, all float64 }

// hookRuns is what one or more runs of a row measured: each hook's time
// (start to answer) and CPU, in ms, and the runs' wall time, the hook
// host's CPU and the machine's.
type hookRuns struct {
	lat, cpu   []float64
	wall       time.Duration
	host, busy float64
}

func (h *hookRuns) add(r hookRuns) {
	h.lat, h.cpu = append(h.lat, r.lat...), append(h.cpu, r.cpu...)
	h.wall += r.wall
	h.host += r.host
	h.busy += r.busy
}

func (h hookRuns) figures() atOnce {
	lat := slices.Sorted(slices.Values(h.lat))
	pick := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	total := 0.0
	for _, c := range h.cpu {
		total += c
	}
	n := float64(len(h.cpu))
	return atOnce{rate: float64(len(lat)) / h.wall.Seconds(), p50: pick(0.50), p99: pick(0.99), max: lat[len(lat)-1],
		cpu: (total + h.host) / n, host: h.host / n, all: h.busy / n}
}

// sessionsAtOnce runs n sessions at once with cx (the build under test, or
// the one at path) — under a cx run each when under, else Codex alone with
// cx's hooks — on a new CX_HOME when fresh (else one cx has run in), and
// during beside them when not nil, and checks each was committed once
// with its turns.
func sessionsAtOnce(b testing.TB, n int, build benchBuild, under, fresh bool, during func(e *env)) hookRuns {
	b.Helper()
	e := newEnv(b)
	cx := build.cx
	if cx != "" {
		e.cx = cx
		writeHooks(b, e)
	}
	if build.floor != "" {
		writeHookCommand(b, e, build.floor)
	} else {
		trustHooks(b, e) // as an install leaves them: Codex under cx knows they run
	}
	logs := b.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	if !fresh {
		// A CX_HOME cx has run in before, as every one is after its first
		// session: its ledger made, Codex's version probed and kept. A
		// fresh one has each of the first runs at once probe Codex (a
		// process of its own) and make the ledger side by side.
		for _, args := range [][]string{{"version"}, {"sweep"}} {
			if out, code := e.ctl(args...); code != 0 {
				b.Fatalf("ctl %v: exit %d: %s", args, code, out)
			}
		}
	}
	busy0 := machineBusy(b)
	start := time.Now()
	if during != nil {
		wg.Add(1)
		go func() { defer wg.Done(); during(e) }()
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("0a0a0a0a-0000-7000-8000-%012d", i+1)
		var script strings.Builder
		fmt.Fprintf(&script, "start %s\nhook SessionStart %s startup\n", id, id)
		for t := 1; t <= 5; t++ {
			fmt.Fprintf(&script, "turn %s session %d asks for change %d of the parser\n", id, i+1, t)
		}
		fmt.Fprintf(&script, "hook SessionEnd %s\nexit 0\n", id)
		cmd := exec.Command(os.Args[0])
		if under {
			cmd = exec.Command(e.cx)
		}
		cmd.Dir = e.w
		cmd.Env = append(e.environ(), "FAKE_SCRIPT="+script.String(), "FAKE_HOOK_LOG="+filepath.Join(logs, id))
		if s := os.Getenv("CX_BENCH_SINKS"); s != "" {
			cmd.Env = append(cmd.Env, "CX_SINKS="+s)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("session %s: %v\n%s", id, err, out)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	busy := machineBusy(b) - busy0
	host := hostCPU(e.cxHome)
	// Its host leaves now, not minutes later beside the next run.
	hookwire.StopHost(e.cxHome, 10*time.Second)
	if os.Getenv("CX_BENCH_KEEP") != "" && cx == "" {
		b.Logf("CX_HOME kept: %s", e.cxHome)
		data, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "hook-events.jsonl"))
		os.WriteFile(os.Getenv("CX_BENCH_KEEP"), data, 0o600)
		data, _ = os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
		os.WriteFile(os.Getenv("CX_BENCH_KEEP")+".log", data, 0o600)
	}
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	var lat, cpu []float64
	files, _ := filepath.Glob(filepath.Join(logs, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev string
			var us, cus int64
			if _, err := fmt.Sscan(line, &ev, &us, &cus); err == nil {
				lat, cpu = append(lat, float64(us)/1000), append(cpu, float64(cus)/1000)
			}
		}
	}
	if want := n * 12; len(lat) != want {
		b.Fatalf("%d sessions: %d hooks ran, want %d", n, len(lat), want)
	}
	if build.floor != "" {
		// No cx: nothing was recorded, nothing is checked.
		return hookRuns{lat: lat, cpu: cpu, wall: wall, busy: busy}
	}
	// Nothing lost: every session committed once, with its five turns.
	if out, code := e.ctl("sweep"); code != 0 {
		b.Fatalf("sweep: exit %d: %s", code, out)
	}
	out, code := e.ctl("sessions", "--json")
	if code != 0 {
		b.Fatalf("sessions: exit %d: %s", code, out)
	}
	var sessions []readmodel.SessionView
	if err := json.Unmarshal([]byte(out), &sessions); err != nil {
		b.Fatalf("sessions --json: %v\n%s", err, out)
	}
	if len(sessions) != n {
		b.Fatalf("%d sessions in the ledger, want %d:\n%s", len(sessions), n, out)
	}
	for _, s := range sessions {
		if s.Generation != 1 || s.TotalTurns != 5 || s.Commits < 1 || s.EndedAt == nil {
			show, _ := e.ctl("show", s.ID, "--json")
			var v readmodel.ShowView
			_ = json.Unmarshal([]byte(show), &v)
			var gens, events []string
			for _, g := range v.Generations {
				gens = append(gens, fmt.Sprintf("g%d %s %s (%d turns)", g.Generation, g.Status, g.EndReason, g.Turns))
			}
			for _, ev := range v.Events {
				events = append(events, ev.Kind+" "+ev.Detail)
			}
			report := b.Errorf
			if cx != "" {
				report = b.Logf // BASE's faults are told, not this build's failure
			}
			report("%s, %d at once: session %s: %d turns in %v; want one generation of 5 turns, committed; events:\n%s", build.name, n, s.ID, s.TotalTurns, gens, strings.Join(events, "\n"))
		}
	}
	return hookRuns{lat: lat, cpu: cpu, wall: wall, host: host, busy: busy}
}

// machineBusy is the CPU time all processors spent busy so far, in ms
// (/proc/stat: user, nice, system, irq, softirq, steal).
func machineBusy(b testing.TB) float64 {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skipf("no /proc/stat: %v", err)
	}
	f := strings.Fields(strings.SplitN(string(data), "\n", 2)[0])
	busy := 0.0
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseFloat(f[i], 64)
		busy += v
	}
	return busy * 1000 / 100 // USER_HZ is 100 on Linux
}

// hostPIDs are the processes of the hook host of CX_HOME home (a
// background sweeper started with that CX_HOME).
func hostPIDs(home string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		if !strings.Contains(string(cmd), "sweep\x00--background") {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		if slices.Contains(strings.Split(string(env), "\x00"), "CX_HOME="+home) {
			pids = append(pids, p)
		}
	}
	return pids
}

// hostCPU is the CPU time, in ms, of the hook host of CX_HOME home while
// it runs (a background sweeper started with that CX_HOME; 0 when none).
func hostCPU(home string) float64 {
	total := 0.0
	for _, p := range hostPIDs(home) {
		stat, _ := os.ReadFile(filepath.Join(p, "stat"))
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) {
			f := strings.Fields(s[i+2:])
			ut, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			total += (ut + st) * 1000 / 100
		}
	}
	return total
}

// benchBuild is a row's hooks: cx's (this build's when cx is "", else the
// one at that path), or, for a floor, a command in cx's place that answers
// every hook with a no-op and records nothing.
type benchBuild struct{ name, cx, floor string }

// floorBuilds are the rows that say what a hook costs before cx does
// anything, on this machine under the same load: "floor Go" is a Go
// program that reads its input and answers (internal/testing/floorhook,
// built as cx-hook is), "floor C" a small C program the shell execs the same way
// (sed, printing the no-op at the input's last line). A hook's CPU less
// the Go floor is cx's own.
func floorBuilds(b testing.TB) []benchBuild {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "floorhook")
	cmd := exec.Command("go", "build", "-o", bin, "cx/internal/testing/floorhook")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the floor hook: %v\n%s", err, out)
	}
	return []benchBuild{
		{name: "floor Go", floor: "exec '" + bin + "'"},
		{name: "floor C", floor: `exec sed -n '$s/.*/{}/p'`},
	}
}

// Many sessions at once through the hook host, which is killed while they
// run, both ways Codex meets cx: every session is still committed once (one
// generation) with all its turns; the hooks before the kill were the
// host's, and those after it found their way (their own processes, or the
// host they started again).
func TestSessionsAtOnceHostKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("many processes")
	}
	for _, under := range []bool{false, true} {
		t.Run(map[bool]string{false: "hooks only", true: "under cx"}[under], func(t *testing.T) {
			killed := make(chan string, 1)
			sessionsAtOnce(t, 8, benchBuild{name: "this build"}, under, true, func(e *env) {
				deadline := time.Now().Add(30 * time.Second)
				for time.Now().Before(deadline) {
					data, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "hook-events.jsonl"))
					if pids := hostPIDs(e.cxHome); len(pids) > 0 && strings.Count(string(data), `"host":true`) >= 8 {
						pid, _ := strconv.Atoi(filepath.Base(pids[0]))
						if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
							killed <- pids[0]
						}
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
			select {
			case <-killed:
			default:
				t.Fatal("the host never took 8 hooks: nothing was killed")
			}
		})
	}
}
