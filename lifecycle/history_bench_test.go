package lifecycle_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// historyTemplate is a real 0.169 TUI session (five turns, a compaction, an
// interrupted turn) repeated, with fresh turn ids, to a history of any size.
const historyTemplate = "../testdata/rollouts/0.169.0/tui-compact-interrupt.jsonl"

var turnIDRE = regexp.MustCompile(`"turn_id":"([^"]+)"`)

// buildHistory writes a rollout of about size bytes: the template's
// session_meta once, then its records again and again, each copy's turn
// ids made unique. It returns the session id and one more turn (fresh ids)
// to append later.
func buildHistory(b *testing.B, path string, size int) (string, []byte, []byte) {
	b.Helper()
	data, err := os.ReadFile(historyTemplate)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	meta, body := lines[0], bytes.Join(lines[1:], nil)
	var m struct {
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		b.Fatal(err)
	}
	var ids []string
	for _, x := range turnIDRE.FindAllStringSubmatch(string(body), -1) {
		if !slices.Contains(ids, x[1]) {
			ids = append(ids, x[1])
		}
	}
	copyOf := func(block []byte, n int) []byte {
		out := string(block)
		for _, id := range ids {
			out = strings.ReplaceAll(out, id, fmt.Sprintf("%s-c%d", id, n))
		}
		return []byte(out)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := len(meta)
	f.Write(meta)
	n := 0
	for ; w < size; n++ {
		c := copyOf(body, n)
		f.Write(c)
		w += len(c)
	}
	// One turn: the records from the first turn's first line to the second's.
	first := bytes.Index(body, []byte(ids[0]))
	second := bytes.Index(body, []byte(ids[1]))
	start := bytes.LastIndexByte(body[:first], '\n') + 1
	end := bytes.LastIndexByte(body[:second], '\n') + 1
	return m.Payload.ID, copyOf(body[start:end], n+1), copyOf(body[start:end], n+2)
}

// benchSizes are the history sizes of the long-history benchmarks, in MB
// (CX_BENCH_SIZES, default 1,100).
func benchSizes() []int {
	v := os.Getenv("CX_BENCH_SIZES")
	if v == "" {
		return []int{1, 100}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, _ := strconv.Atoi(f)
		sizes = append(sizes, n)
	}
	return sizes
}

// benchRounds is CX_BENCH_ROUNDS, else def.
func benchRounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("CX_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkHookHistory runs the hooks of a session as Codex runs them —
// each a process, timed from its start to its answer — on the same
// session at ~1 MB and ~100 MB of history (CX_BENCH_SIZES, in MB), in the
// order a resumed long session meets them: SessionStart(startup) (cx's
// first sight of the history), UserPromptSubmit, Stop, Stop after one more
// turn; then — the history caught up by a sweep, as the background sweeper
// those hooks start does — Stop after another turn, SessionStart(resume),
// SessionEnd. Each round (CX_BENCH_ROUNDS,
// default 3) has a fresh CX_HOME; run it with -benchtime 1x.
// With CX_BENCH_BASELINE_CX=<another cx binary> (e.g. one built from an
// earlier commit) the same rounds run through it, alternating, as the
// baseline; `node -e ”` is timed too, the floor of a Node.js hook.
func BenchmarkHookHistory(b *testing.B) {
	sizes := benchSizes()
	binaries := map[string]string{"cx": newEnv(b).cx}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		binaries["base"] = base
	}
	hooks := []string{"start", "prompt", "stop", "stop+1", "stop+2", "resume", "end"}
	times := map[string][]time.Duration{}
	rounds := benchRounds(3)
	node, nodeErr := exec.LookPath("node")
	for _, mb := range sizes {
		for r := 0; r < rounds; r++ {
			for _, name := range []string{"cx", "base"} {
				bin, ok := binaries[name]
				if !ok {
					continue
				}
				e := newEnv(b)
				dir := filepath.Join(e.codexHome, "sessions", "2026", "11", "22")
				os.MkdirAll(dir, 0o700)
				path := filepath.Join(dir, "rollout-2026-11-22T01-32-39-01a200e2-466f-78c1-85cf-e11cb0ec651a.jsonl")
				id, turn, turn2 := buildHistory(b, path, mb<<20)
				// Codex 0.169 (the history's version) holds the thread's
				// writer lock while it runs: a sweep leaves a thread so held
				// alone, and ends one no Codex holds.
				unlock := holdWriterLock(b, e.codexHome, id)
				run := func(hook, event string, extra map[string]any) {
					p := map[string]any{"session_id": id, "transcript_path": path, "cwd": e.w, "hook_event_name": event}
					for k, v := range extra {
						p[k] = v
					}
					payload, _ := json.Marshal(p)
					cmd := exec.Command(bin, "ctl", "hook", event)
					cmd.Env = e.environ()
					cmd.Stdin = bytes.NewReader(payload)
					start := time.Now()
					out, err := cmd.Output()
					d := time.Since(start)
					if err != nil || !json.Valid(out) {
						b.Fatalf("%s %s: %v %q", name, hook, err, out)
					}
					key := fmt.Sprintf("%s/%dMB/%s", name, mb, hook)
					times[key] = append(times[key], d)
				}
				run("start", "SessionStart", map[string]any{"source": "startup", "model": "gpt-5.5"})
				run("prompt", "UserPromptSubmit", map[string]any{"turn_id": "bench-1", "prompt": "go on"})
				run("stop", "Stop", map[string]any{"turn_id": "bench-1", "stop_hook_active": false, "last_assistant_message": "ok"})
				f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.Write(turn)
				f.Close()
				run("stop+1", "Stop", map[string]any{"turn_id": "bench-2", "stop_hook_active": false, "last_assistant_message": "ok"})
				// The history caught up (untimed), as the sweeper those hooks
				// started does in the background.
				sweep := exec.Command(bin, "ctl", "sweep")
				sweep.Env = e.environ()
				if out, err := sweep.CombinedOutput(); err != nil {
					b.Fatalf("%s sweep: %v %s", name, err, out)
				}
				f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				f.Write(turn2)
				f.Close()
				run("stop+2", "Stop", map[string]any{"turn_id": "bench-3", "stop_hook_active": false, "last_assistant_message": "ok"})
				run("resume", "SessionStart", map[string]any{"source": "resume", "model": "gpt-5.5"})
				run("end", "SessionEnd", map[string]any{"reason": "other"})
				unlock()
				os.RemoveAll(e.cxHome)
				os.Remove(path)
			}
			if nodeErr == nil {
				start := time.Now()
				if err := exec.Command(node, "-e", "").Run(); err == nil {
					times["node"] = append(times["node"], time.Since(start))
				}
			}
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "median ms over %d rounds (process start to answer)\n%-8s", rounds, "hook")
	for _, mb := range sizes {
		for _, name := range []string{"cx", "base"} {
			if _, ok := binaries[name]; ok {
				fmt.Fprintf(&table, " %12s", fmt.Sprintf("%s@%dMB", name, mb))
			}
		}
	}
	table.WriteString("\n")
	for _, h := range hooks {
		fmt.Fprintf(&table, "%-8s", h)
		for _, mb := range sizes {
			for _, name := range []string{"cx", "base"} {
				if ds := times[fmt.Sprintf("%s/%dMB/%s", name, mb, h)]; len(ds) > 0 {
					fmt.Fprintf(&table, " %12.1f", codextest.Ms(ds, 50))
					b.ReportMetric(codextest.Ms(ds, 50), fmt.Sprintf("%s-%dMB-%s-ms", name, mb, h))
				}
			}
		}
		table.WriteString("\n")
	}
	if ds := times["node"]; len(ds) > 0 {
		fmt.Fprintf(&table, "node -e '' %.1f\n", codextest.Ms(ds, 50))
		b.ReportMetric(codextest.Ms(ds, 50), "node-e-ms")
	}
	b.Log("\n" + table.String())
}

// holdWriterLock takes the thread's writer lock as a running Codex 0.169
// does (flock on thread-writer-locks/<id>.lock) and returns its release.
func holdWriterLock(b *testing.B, codexHome, id string) func() {
	b.Helper()
	dir := filepath.Join(codexHome, "thread-writer-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		b.Fatal(err)
	}
	return func() { f.Close() }
}
