package recall_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// The recall quality benchmark reads LoCoMo (snap-research/LoCoMo, CC BY-NC
// 4.0) from outside the repository: a development split of it lives beside
// the project (CX_RECALL_DATA names another file of the same shape, such as
// the held-out conversations). Nothing of it is copied here.
func locomoPath() string {
	if p := os.Getenv("CX_RECALL_DATA"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "..", "shared", "recall-dev", "locomo-dev.json")
}

type locomoLine struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type locomoConv struct {
	SampleID string                     `json:"sample_id"`
	Conv     map[string]json.RawMessage `json:"conversation"`
	QA       []struct {
		Question string   `json:"question"`
		Evidence []string `json:"evidence"`
		Category int      `json:"category"`
	} `json:"qa"`
}

// where is an evidence line's place: the session (Codex thread) and the
// turn (1-based) that holds it.
type where struct {
	session string
	turn    int
}

type question struct {
	text    string
	project string
	want    []where
}

// writeLocomo writes each conversation's sessions as Codex rollouts (0.128
// shape) under codexHome, one project directory per conversation — a
// speaker's line and the reply to it are one turn, "Name: text" each, a
// shared photo as its caption — and returns the questions whose answer is
// in the record (categories 1-4), each with the turns of its evidence.
func writeLocomo(b *testing.B, path, codexHome, projects string) []question {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skipf("no LoCoMo data at %s (CX_RECALL_DATA names it): %v", path, err)
	}
	var convs []locomoConv
	if err := json.Unmarshal(data, &convs); err != nil {
		b.Fatal(err)
	}
	var qs []question
	for ci, c := range convs {
		project := filepath.Join(projects, fmt.Sprintf("conv-%d", ci))
		os.MkdirAll(project, 0o700)
		at := map[string]where{}
		for n := 1; ; n++ {
			raw, ok := c.Conv[fmt.Sprintf("session_%d", n)]
			if !ok {
				break
			}
			var lines []locomoLine
			var date string
			json.Unmarshal(raw, &lines)
			json.Unmarshal(c.Conv[fmt.Sprintf("session_%d_date_time", n)], &date)
			start, err := time.Parse("3:04 pm on 2 January, 2006", date)
			if err != nil {
				b.Fatalf("conversation %d session %d: date %q: %v", ci, n, date, err)
			}
			sid := fmt.Sprintf("%08x-0000-7000-8000-%012x", ci+1, n)
			for i, l := range lines {
				at[l.DiaID] = where{sid, i/2 + 1}
			}
			writeRollout(b, codexHome, project, sid, start, locomoTurns(lines))
		}
		for _, q := range c.QA {
			if q.Category < 1 || q.Category > 4 || len(q.Evidence) == 0 {
				continue
			}
			qq := question{text: q.Question, project: project}
			for _, e := range q.Evidence {
				for _, id := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
					if w, ok := at[id]; ok {
						qq.want = append(qq.want, w)
					}
				}
			}
			if len(qq.want) > 0 {
				qs = append(qs, qq)
			}
		}
	}
	return qs
}

func lineText(l locomoLine) string {
	s := l.Speaker + ": " + l.Text
	if l.Caption != "" {
		s += " [shares a photo: " + l.Caption + "]"
	}
	return s
}

// benchTurn is one turn of a written rollout: a prompt, the commands run
// (with their exit codes), the files patched, a reply.
type benchTurn struct {
	Prompt   string   `json:"prompt"`
	Commands [][]any  `json:"commands"` // [command, exit code]
	Files    []string `json:"files"`
	Reply    string   `json:"reply"`
}

func locomoTurns(lines []locomoLine) []benchTurn {
	var turns []benchTurn
	for i := 0; i < len(lines); i += 2 {
		t := benchTurn{Prompt: lineText(lines[i])}
		if i+1 < len(lines) {
			t.Reply = lineText(lines[i+1])
		}
		turns = append(turns, t)
	}
	return turns
}

// writeRollout writes turns as a Codex 0.128 rollout (user and assistant
// messages, exec_command calls with their exit codes, apply_patch calls).
func writeRollout(b *testing.B, codexHome, cwd, sid string, start time.Time, turns []benchTurn) {
	b.Helper()
	dir := filepath.Join(codexHome, "sessions", start.Format("2006/01/02"))
	os.MkdirAll(dir, 0o700)
	var buf bytes.Buffer
	rec := func(t time.Time, typ string, payload any) {
		line, _ := json.Marshal(map[string]any{"timestamp": t.UTC().Format("2006-01-02T15:04:05.000Z"), "type": typ, "payload": payload})
		buf.Write(append(line, '\n'))
	}
	rec(start, "session_meta", map[string]any{"id": sid, "timestamp": start.UTC().Format(time.RFC3339), "cwd": cwd, "originator": "codex-tui", "cli_version": "0.128.0"})
	for i, tn := range turns {
		t := start.Add(time.Duration(2*i) * time.Minute)
		turn := fmt.Sprintf("%s-t%d", sid, i+1)
		rec(t, "event_msg", map[string]any{"type": "task_started", "turn_id": turn})
		rec(t, "event_msg", map[string]any{"type": "user_message", "message": tn.Prompt, "kind": "plain"})
		rec(t, "response_item", map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": tn.Prompt}}})
		for j, c := range tn.Commands {
			call := fmt.Sprintf("%s-c%d", turn, j)
			args, _ := json.Marshal(map[string]any{"cmd": c[0]})
			rec(t, "response_item", map[string]any{"type": "function_call", "name": "exec_command", "arguments": string(args), "call_id": call})
			rec(t, "response_item", map[string]any{"type": "function_call_output", "call_id": call, "output": "ok"})
			rec(t, "event_msg", map[string]any{"type": "exec_command_end", "call_id": call, "exit_code": c[1]})
		}
		for j, f := range tn.Files {
			call := fmt.Sprintf("%s-p%d", turn, j)
			rec(t, "response_item", map[string]any{"type": "custom_tool_call", "name": "apply_patch", "call_id": call,
				"input": "*** Begin Patch\n*** Update File: " + f + "\n@@\n-old\n+new\n*** End Patch\n"})
			rec(t, "response_item", map[string]any{"type": "custom_tool_call_output", "call_id": call, "output": "Success."})
		}
		if tn.Reply != "" {
			rec(t, "response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": tn.Reply}}})
		}
		rec(t, "event_msg", map[string]any{"type": "task_complete", "turn_id": turn})
	}
	path := filepath.Join(dir, "rollout-"+start.Format("2006-01-02T15-04-05")+"-"+sid+".jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	os.Chtimes(path, start, start)
}

// writeCoding writes the coding-shaped history of testdata/recall (three
// sessions of one project) and returns its questions.
func writeCoding(b *testing.B, codexHome, projects string) []question {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "recall", "coding.json"))
	if err != nil {
		b.Fatal(err)
	}
	var set struct {
		Sessions  [][]benchTurn `json:"sessions"`
		Questions []struct {
			Q             string `json:"q"`
			Session, Turn int
		} `json:"questions"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		b.Fatal(err)
	}
	project := filepath.Join(projects, "coding")
	os.MkdirAll(project, 0o700)
	start := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	var sids []string
	for i, turns := range set.Sessions {
		sid := fmt.Sprintf("0c0d0000-0000-7000-8000-%012x", i+1)
		sids = append(sids, sid)
		writeRollout(b, codexHome, project, sid, start.Add(time.Duration(i)*24*time.Hour), turns)
	}
	var qs []question
	for _, q := range set.Questions {
		qs = append(qs, question{text: q.Q, project: project, want: []where{{sids[q.Session-1], q.Turn}}})
	}
	return qs
}

// offTopic are prompts about something else entirely: coding work asked in
// a project whose history is only conversations. Per-prompt recall should
// add nothing to them.
var offTopic = []string{
	"Fix the failing test in parser_test.go",
	"Add a retry with exponential backoff to the HTTP client",
	"Why does go vet complain about the struct tags in config.go?",
	"Rename the function parseArgs to parseFlags everywhere",
	"Write a Makefile target that runs the linter",
	"The build fails with undefined: sqlite.Open, what changed?",
	"Add a --json flag to the status command",
	"Bump the Go version in go.mod to 1.26",
	"Refactor the database migrations into their own package",
	"Add unit tests for the tokenizer edge cases",
	"Why is the CI job timing out on the integration tests?",
	"Convert the callback API to use context cancellation",
	"Profile the hot loop in the JSON decoder and make it faster",
	"Set up a GitHub Actions workflow for releases",
	"Explain what this regular expression matches",
	"Replace the mutex with a channel in the worker pool",
	"Make the log output structured with slog",
	"Find the memory leak in the websocket handler",
	"Update the README with installation instructions",
	"Add a Dockerfile for the server",
	"Handle SIGTERM gracefully in the daemon",
	"Cache the compiled templates between requests",
	"Implement pagination for the list endpoint",
	"Add a benchmark for the compression function",
	"Split the monolithic main.go into packages",
	"Fix the race detector warning in the scheduler",
	"Generate a changelog from the git history",
	"Validate the YAML config before loading it",
	"Add TLS support to the gRPC server",
	"Remove the deprecated flags from the CLI",
	"Why does the linker say duplicate symbol in the cgo build?",
	"Write a migration that adds an index on users.email",
	"Port the shell script to Go",
	"Make the retry loop respect the context deadline",
	"Add OpenTelemetry tracing to the HTTP handlers",
	"Check whether the lockfile is stale before acquiring it",
	"Speed up the test suite by running packages in parallel",
	"Add a health check endpoint that reports the database status",
	"Replace the hand-written parser with a generated one",
	"What does the error 'text file busy' mean when I run the binary?",
}

// trivial are prompts recall must always stay quiet for.
var trivial = []string{"ok", "thanks", "Thanks!", "yes", "continue", "go on", "/status", "/compact", "k", "lgtm", "do it", "sounds good"}

// BenchmarkRecallQuality measures, on LoCoMo's conversations written as
// Codex rollouts and imported with `cx ctl import`, each question asked as
// typed: the share whose evidence turn is in `cx ctl search`'s top 5
// (--project, --limit 5), the share whose evidence turn is in what
// per-prompt recall adds (`cx ctl recall`), the share of off-topic and of
// trivial prompts recall stays quiet for, the characters it adds per
// prompt, and search's time as a process beside `cx ctl version`'s. Run it
// with -benchtime 1x.
func BenchmarkRecallQuality(b *testing.B) {
	cx := codextest.CX(b)
	root := b.TempDir()
	if os.Getenv("CX_BENCH_KEEP") != "" { // to ask it more by hand afterwards
		root, _ = os.MkdirTemp("", "cx-recall-bench-")
		b.Logf("kept: CODEX_HOME=%s/codex CX_HOME=%s/cx", root, root)
	}
	codexHome, cxHome, projects := filepath.Join(root, "codex"), filepath.Join(root, "cx"), filepath.Join(root, "projects")
	qs := writeLocomo(b, locomoPath(), codexHome, projects)
	coding := writeCoding(b, codexHome, projects)
	env := append(os.Environ(), "CODEX_HOME="+codexHome, "CX_HOME="+cxHome)
	run := func(args ...string) ([]byte, time.Duration) {
		cmd := exec.Command(cx, args...)
		cmd.Env = env
		cmd.Dir = projects
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("cx %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out, d
	}
	out, took := run("ctl", "import", "--json")
	b.Logf("import: %.1f s: %s", took.Seconds(), bytes.TrimSpace(out))
	b.ResetTimer()
	var searchTimes, versionTimes []time.Duration
	var trace *os.File
	if p := os.Getenv("CX_BENCH_TRACE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		trace = f
	}
	// measure asks each question of a set as typed, of search (top 5) and
	// of per-prompt recall.
	measure := func(qs []question) (m struct {
		searchFound, recallFound, given, chars int
		misses                                 []string
	}) {
		for i, q := range qs {
			out, d := run("ctl", "search", "--project", q.project, "--json", "--limit", "5", q.text)
			searchTimes = append(searchTimes, d)
			_, d = run("ctl", "version")
			versionTimes = append(versionTimes, d)
			var res struct {
				Hits []struct {
					Session string `json:"session"`
					Turn    int    `json:"turn"`
				} `json:"hits"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("search %q: %v\n%s", q.text, err, out)
			}
			found := false
			for _, h := range res.Hits {
				for _, w := range q.want {
					found = found || (h.Session == w.session && h.Turn == w.turn)
				}
			}
			if found {
				m.searchFound++
			} else if len(m.misses) < 12 && (len(qs) < 50 || i%7 == 0) {
				m.misses = append(m.misses, q.text)
			}
			items, n := recallItems(b, run, q.project, q.text)
			if len(items) > 0 {
				m.given++
			}
			m.chars += n
			held := false
		holds:
			for _, it := range items {
				for _, w := range q.want {
					if it.session == w.session && it.turn == w.turn {
						m.recallFound++
						held = true
						break holds
					}
				}
			}
			if trace != nil { // CX_BENCH_TRACE: each question's outcome, to study the misses
				line, _ := json.Marshal(map[string]any{"q": q.text, "project": filepath.Base(q.project), "want": fmt.Sprint(q.want),
					"search": found, "recall": held, "items": fmt.Sprint(items)})
				fmt.Fprintf(trace, "%s\n", line)
			}
		}
		return m
	}
	lo := measure(qs)
	co := measure(coding)
	quiet := func(prompts []string) (int, int) {
		q, c := 0, 0
		for _, p := range prompts {
			items, n := recallItems(b, run, filepath.Join(projects, "conv-0"), p)
			if len(items) == 0 {
				q++
			}
			c += n
		}
		return q, c
	}
	offQuiet, offChars := quiet(offTopic)
	trivQuiet, _ := quiet(trivial)
	b.StopTimer()
	pct := func(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }
	b.ReportMetric(pct(lo.searchFound, len(qs)), "search-top5-%")
	b.ReportMetric(pct(lo.recallFound, len(qs)), "recall-holds-%")
	b.ReportMetric(pct(offQuiet, len(offTopic)), "offtopic-quiet-%")
	b.ReportMetric(pct(co.searchFound, len(coding)), "coding-search-top5-%")
	b.Logf("%d questions (LoCoMo categories 1-4, %s):\n"+
		"  search top 5 holds the evidence turn: %d (%.1f%%)\n"+
		"  per-prompt recall holds it: %d (%.1f%%); recall added something for %d (%.1f%%), %.0f characters per question on average\n"+
		"  off-topic prompts recall stays quiet for: %d of %d (%.1f%%), %.0f characters per off-topic prompt\n"+
		"  trivial prompts recall stays quiet for: %d of %d\n"+
		"  a sample of questions search missed: %q\n"+
		"%d coding-shaped questions (testdata/recall/coding.json, asked in other words than the turns'):\n"+
		"  search top 5 holds the answering turn: %d; per-prompt recall holds it: %d (added something for %d)\n"+
		"  search missed: %q\n"+
		"search as a process p50 %.1f ms p90 %.1f ms; cx ctl version p50 %.1f ms (%.2f×)",
		len(qs), filepath.Base(locomoPath()),
		lo.searchFound, pct(lo.searchFound, len(qs)),
		lo.recallFound, pct(lo.recallFound, len(qs)), lo.given, pct(lo.given, len(qs)), float64(lo.chars)/float64(max(len(qs), 1)),
		offQuiet, len(offTopic), pct(offQuiet, len(offTopic)), float64(offChars)/float64(len(offTopic)),
		trivQuiet, len(trivial), lo.misses,
		len(coding), co.searchFound, co.recallFound, co.given, co.misses,
		codextest.Ms(searchTimes, 50), codextest.Ms(searchTimes, 90), codextest.Ms(versionTimes, 50), codextest.Ms(searchTimes, 50)/codextest.Ms(versionTimes, 50))
}

type recalled struct {
	session string
	turn    int
	score   float64
}

// recallItems is what `cx ctl recall` would add for prompt in project, and
// how many characters of text that is.
func recallItems(b *testing.B, run func(...string) ([]byte, time.Duration), project, prompt string) ([]recalled, int) {
	b.Helper()
	out, _ := run("ctl", "recall", "--project", project, "--json", prompt)
	var res struct {
		Items []struct {
			Session string  `json:"session"`
			Turn    int     `json:"turn"`
			Text    string  `json:"text"`
			Score   float64 `json:"score"`
		} `json:"items"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("recall %q: %v\n%s", prompt, err, out)
	}
	var items []recalled
	n := 0
	for _, it := range res.Items {
		items = append(items, recalled{it.Session, it.Turn, it.Score})
		n += len([]rune(it.Text))
	}
	return items, n
}
