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
	"testing"
	"time"

	"cx/internal/readmodel"
)

// BenchmarkSessionsAtOnce is many Codex sessions beside each other, as an
// agent daemon or a person with several windows runs them, Codex started
// without cx (hooks only): each session its own fake Codex process that
// holds its thread's writer lock (as Codex 0.169+ does) and plays
// SessionStart, 5 × (UserPromptSubmit, a turn appended to its rollout,
// Stop) and SessionEnd, every hook a process through hooks.json; all at
// once on one CX_HOME, then a sweep. For 1, 4 and 16 sessions at once
// (CX_BENCH_SESSIONS: a comma list) it prints hooks a second (all hooks
// over the wall time), each hook's p50, p99 and max (its process, start to
// answer) and its CPU (user + sys), beside the same run of the cx at BASE
// (CX_BENCH_BASELINE_CX), alternated; and it fails unless every session
// was committed once (one generation) with its 5 turns.
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
	builds := []struct{ name, cx string }{{"this build", ""}}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		builds = append(builds, struct{ name, cx string }{"BASE", base})
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-10s %-9s %8s %9s %9s %9s %10s", "sessions", "build", "hooks/s", "p50 ms", "p99 ms", "max ms", "CPU/hook")
	for _, n := range levels {
		for _, build := range builds {
			r := sessionsAtOnce(b, n, build.cx)
			fmt.Fprintf(&report, "\n%-10d %-9s %8.0f %9.1f %9.1f %9.1f %8.1f ms", n, build.name, r.rate, r.p50, r.p99, r.max, r.cpu)
			if build.cx == "" {
				b.ReportMetric(r.p99, fmt.Sprintf("p99-ms-%d", n))
				b.ReportMetric(r.rate, fmt.Sprintf("hooks/s-%d", n))
			}
		}
	}
	b.Logf("sessions at once, Codex started without cx (hooks as processes, one CX_HOME):%s", report.String())
}

type atOnce struct{ rate, p50, p99, max, cpu float64 }

// sessionsAtOnce runs n sessions at once with cx (the build under test, or
// the one at path) and checks each was committed once with its turns.
func sessionsAtOnce(b *testing.B, n int, cx string) atOnce {
	b.Helper()
	e := newEnv(b)
	if cx != "" {
		e.cx = cx
		writeHooks(b, e)
	}
	logs := b.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("0a0a0a0a-0000-7000-8000-%012d", i+1)
		var script strings.Builder
		fmt.Fprintf(&script, "start %s\nhook SessionStart %s startup\n", id, id)
		for t := 1; t <= 5; t++ {
			fmt.Fprintf(&script, "turn %s session %d asks for change %d of the parser\n", id, i+1, t)
		}
		fmt.Fprintf(&script, "hook SessionEnd %s\nexit 0\n", id)
		cmd := exec.Command(os.Args[0])
		cmd.Dir = e.w
		cmd.Env = append(e.environ(), "FAKE_SCRIPT="+script.String(), "FAKE_HOOK_LOG="+filepath.Join(logs, id))
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
			b.Errorf("%s, %d at once: session %s: %d turns in %v; want one generation of 5 turns, committed; events:\n%s", build(cx), n, s.ID, s.TotalTurns, gens, strings.Join(events, "\n"))
		}
	}
	slices.Sort(lat)
	pick := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	total := 0.0
	for _, c := range cpu {
		total += c
	}
	return atOnce{rate: float64(len(lat)) / wall.Seconds(), p50: pick(0.50), p99: pick(0.99), max: lat[len(lat)-1], cpu: total / float64(len(cpu))}
}

// build names the cx a run used: this build, or the one at BASE.
func build(cx string) string {
	if cx == "" {
		return "this build"
	}
	return "BASE"
}
