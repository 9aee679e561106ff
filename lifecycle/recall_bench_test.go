package lifecycle_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkRecallSearch archives a real-shaped session of ~1 MB and one of
// ~100 MB (CX_BENCH_SIZES; 100 MB is ~5,200 turns) with `cx ctl import`,
// each ending with one turn that holds a word no other turn has, then
// times `cx ctl search` — process start to exit, as a user meets it —
// alternating between the two archives (CX_BENCH_ROUNDS, default 15):
// the rare word (it must be found, in that turn, and only there) and a
// word of every fifth turn (ranking over ~1,000 matches), and `cx ctl show
// --turn` of the rare word's turn. The 1 MB
// search is the 100 MB one's baseline; the target is max(60 ms, 3×).
// Run it with -benchtime 1x.
func BenchmarkRecallSearch(b *testing.B) {
	sizes, rounds := benchSizes(), benchRounds(15)
	const rare, common = "quasarwombat", "flaky"
	type archive struct {
		e     *env
		turns int
	}
	archives := map[int]archive{}
	for _, mb := range sizes {
		e := newEnv(b)
		importHistory(b, e, mb, rare)
		cmd := exec.Command(e.cx, "ctl", "sessions", "--json")
		cmd.Env = e.environ()
		out, err := cmd.Output()
		var ss []struct {
			TotalTurns int `json:"total_turns"`
		}
		if err != nil || json.Unmarshal(out, &ss) != nil || len(ss) != 1 {
			b.Fatalf("sessions after import: %v\n%s", err, out)
		}
		archives[mb] = archive{e, ss[0].TotalTurns}
	}
	times := map[string][]time.Duration{}
	search := func(mb int, word string) {
		a := archives[mb]
		cmd := exec.Command(a.e.cx, "ctl", "search", "--all", "--json", word)
		cmd.Env = a.e.environ()
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("search %q at %d MB: %v", word, mb, err)
		}
		var res struct {
			Hits []struct{ Turn int } `json:"hits"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatal(err)
		}
		switch {
		case word == rare && (len(res.Hits) != 1 || res.Hits[0].Turn != a.turns):
			b.Fatalf("%q at %d MB: hits %+v, want turn %d alone", word, mb, res.Hits, a.turns)
		case word == common && len(res.Hits) != 10:
			b.Fatalf("%q at %d MB: %d hits, want 10", word, mb, len(res.Hits))
		}
		times[fmt.Sprintf("%s@%dMB", word, mb)] = append(times[fmt.Sprintf("%s@%dMB", word, mb)], d)
	}
	// show is `cx ctl show ID --turn N` of the rare word's turn, whole.
	show := func(mb int) {
		a := archives[mb]
		cmd := exec.Command(a.e.cx, "ctl", "show", "01a200e2-466f-78c1-85cf-e11cb0ec651a", "--turn", strconv.Itoa(a.turns))
		cmd.Env = a.e.environ()
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil || !bytes.Contains(out, []byte(rare)) {
			b.Fatalf("show --turn %d at %d MB: %v\n%s", a.turns, mb, err, out)
		}
		times[fmt.Sprintf("show@%dMB", mb)] = append(times[fmt.Sprintf("show@%dMB", mb)], d)
	}
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for _, mb := range sizes {
			search(mb, rare)
			search(mb, common)
			show(mb)
		}
	}
	b.StopTimer()
	var report strings.Builder
	for _, mb := range sizes {
		fmt.Fprintf(&report, "\n%4d MB (%d turns):", mb, archives[mb].turns)
		for _, w := range []string{rare, common, "show"} {
			ds := times[fmt.Sprintf("%s@%dMB", w, mb)]
			fmt.Fprintf(&report, "  %s p50 %.1f ms p90 %.1f ms", w, codextest.Ms(ds, 50), codextest.Ms(ds, 90))
			b.ReportMetric(codextest.Ms(ds, 50), fmt.Sprintf("%s-%dMB-ms", w, mb))
		}
	}
	if len(sizes) == 2 {
		for _, w := range []string{rare, common, "show"} {
			small, big := codextest.Ms(times[fmt.Sprintf("%s@%dMB", w, sizes[0])], 50), codextest.Ms(times[fmt.Sprintf("%s@%dMB", w, sizes[1])], 50)
			fmt.Fprintf(&report, "\n%s: %d MB / %d MB = %.2f× (target: within max(60 ms, 3×) of %d MB: ≤ %.1f ms, is %.1f ms)",
				w, sizes[1], sizes[0], big/small, sizes[0], max(60, 3*small), big)
		}
	}
	b.Logf("cx ctl search, process start to exit, %d alternated rounds:%s", rounds, report.String())
}

// importHistory writes a real-shaped session of mb megabytes into e's
// Codex home, its last turn holding the word rare (which no other turn
// does), two days old, and imports it with `cx ctl import`. It returns the
// rollout's folder.
func importHistory(b *testing.B, e *env, mb int, rare string) string {
	b.Helper()
	dir := filepath.Join(e.codexHome, "sessions", "2026", "11", "22")
	os.MkdirAll(dir, 0o700)
	path := filepath.Join(dir, "rollout-2026-11-22T01-32-39-01a200e2-466f-78c1-85cf-e11cb0ec651a.jsonl")
	_, turn, _ := buildHistory(b, path, mb<<20)
	turn = bytes.ReplaceAll(turn, []byte("fix the flaky test in parser_test.go"), []byte("fix the "+rare+" in parser_test.go"))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	f.Write(turn)
	f.Close()
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(path, old, old)
	cmd := exec.Command(e.cx, "ctl", "import", "--json")
	cmd.Env = e.environ()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("import %d MB: %v\n%s", mb, err, out)
	}
	b.Logf("import of %d MB: %.1f s", mb, time.Since(start).Seconds())
	return dir
}

// BenchmarkPromptRecall times per-prompt recall where users meet it: a
// new session's UserPromptSubmit hook as Codex runs it (a process, start
// to answer), over an archive of CX_BENCH_RECALL_MB megabytes (default
// 1024: a real-shaped session imported with `cx ctl import`, every turn of
// it matching the prompt's words — the worst case for the index), with
// recall on against the same hook with CX_RECALL_OFF=1, alternating, each
// round a fresh session (so nothing is deduplicated away). Two prompts: one
// whose words every archived turn holds, and one with a word a single turn
// holds. Target: recall on ≤ 1.2× off. It also prints the first prompt
// after the import, which reads the window from the ledger and writes its
// file (internal/recall). Run it with -benchtime 1x.
func BenchmarkPromptRecall(b *testing.B) {
	mb := 1024
	if n, err := strconv.Atoi(os.Getenv("CX_BENCH_RECALL_MB")); err == nil && n > 0 {
		mb = n
	}
	rounds := benchRounds(15)
	const rare = "quasarwombat"
	e := newEnv(b)
	dir := importHistory(b, e, mb, rare)
	// The prompts come from the archived session's project (its cwd).
	var meta struct {
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	head, _ := os.ReadFile(historyTemplate)
	json.Unmarshal(head[:bytes.IndexByte(head, '\n')], &meta)
	prompts := map[string]string{"common": "how did we fix the flaky test in parser_test.go?", "rare": "what was the " + rare + " about?"}
	times := map[string][]time.Duration{}
	n := 0
	hook := func(which, prompt string, off bool) {
		n++
		sid := fmt.Sprintf("0b0b0b0b-0000-7000-8000-%012d", n)
		payload, _ := json.Marshal(map[string]any{"session_id": sid, "transcript_path": filepath.Join(dir, "rollout-none-"+sid+".jsonl"), "cwd": meta.Payload.Cwd,
			"hook_event_name": "UserPromptSubmit", "turn_id": "t1", "prompt": prompt})
		cmd := exec.Command(e.cx, "ctl", "hook", "UserPromptSubmit")
		cmd.Env = e.environ()
		key := which + "/on"
		if off {
			cmd.Env = append(cmd.Env, "CX_RECALL_OFF=1")
			key = which + "/off"
		}
		cmd.Stdin = bytes.NewReader(payload)
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil || !json.Valid(out) {
			b.Fatalf("%s: %v %q", key, err, out)
		}
		if got := bytes.Contains(out, []byte("cx:recall")); got == off {
			b.Fatalf("%s: recall block %v, want %v:\n%s", key, got, !off, out)
		}
		times[key] = append(times[key], d)
	}
	// The first prompt after the import finds no window file: it reads the
	// window from the ledger and writes it, once.
	hook("first", prompts["common"], false)
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for _, which := range []string{"common", "rare"} {
			hook(which, prompts[which], r%2 == 1)
			hook(which, prompts[which], r%2 == 0)
		}
	}
	b.StopTimer()
	var report strings.Builder
	for _, which := range []string{"common", "rare"} {
		on, off := codextest.Ms(times[which+"/on"], 50), codextest.Ms(times[which+"/off"], 50)
		fmt.Fprintf(&report, "\n%-6s prompt: recall on p50 %.1f ms (p90 %.1f), off p50 %.1f ms (p90 %.1f): %.2f× (target ≤ 1.2×)",
			which, on, codextest.Ms(times[which+"/on"], 90), off, codextest.Ms(times[which+"/off"], 90), on/off)
		b.ReportMetric(on/off, which+"-on/off")
	}
	fmt.Fprintf(&report, "\nthe first prompt after the import (its window read from the ledger and written): %.1f ms", codextest.Ms(times["first/on"], 50))
	b.Logf("UserPromptSubmit at %d MB of archive, process start to answer, %d alternated rounds:%s", mb, rounds, report.String())
}
