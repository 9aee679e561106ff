package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func line(typ, payload string) string {
	return `{"timestamp":"2026-11-22T01:00:00Z","type":"` + typ + `","payload":` + payload + "}\n"
}

func turnLines(id, text string) string {
	return line("event_msg", `{"type":"task_started","turn_id":"`+id+`"}`) +
		line("event_msg", `{"type":"user_message","message":"`+text+`"}`) +
		line("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok `+text+`"}]}`) +
		line("event_msg", `{"type":"task_complete","turn_id":"`+id+`"}`)
}

const meta = `{"timestamp":"2026-11-22T01:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","timestamp":"2026-11-22T01:00:00Z"}}` + "\n"

func write(t *testing.T, p, s string, appendTo bool) {
	t.Helper()
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(p, flag, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func keys(c Capture) string {
	var k []string
	for _, t := range c.Turns {
		k = append(k, t.Key)
	}
	return strings.Join(k, ",")
}

// A half-written last line is left for the next read; the cursor stays at
// the start of an unfinished turn, which is read again whole.
func TestIncompleteLastLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	full := meta + turnLines("t1", "one") + turnLines("t2", "two")
	cut := len(meta) + len(turnLines("t1", "one")) + 30
	write(t, p, full[:cut], false)
	c1, err := CaptureFile(p, Cursor{}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if keys(c1) != "t1" || c1.Cursor.Seen > int64(cut) {
		t.Fatalf("first read: turns %q cursor %+v", keys(c1), c1.Cursor)
	}
	write(t, p, full[cut:], true)
	c2, err := CaptureFile(p, c1.Cursor, c1.Meta, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if keys(c2) != "t2" || c2.Turns[0].User != "two" || !c2.Turns[0].Complete || c2.Cursor.Offset != int64(len(full)) {
		t.Fatalf("second read: %+v cursor %+v", c2.Turns, c2.Cursor)
	}
	// Nothing new: nothing read again.
	c3, _ := CaptureFile(p, c2.Cursor, c2.Meta, Options{})
	if len(c3.Turns) != 0 || c3.Bytes != 0 {
		t.Fatalf("third read found %d turns, %d bytes", len(c3.Turns), c3.Bytes)
	}
}

// A rollout truncated and rewritten mid-session: re-read from the start;
// turn keys let the caller drop what it has (no turn lost, none doubled).
func TestShrinkAndRewrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	write(t, p, meta+turnLines("t1", "one")+turnLines("t2", "two"), false)
	c1, _ := CaptureFile(p, Cursor{}, nil, Options{})
	if keys(c1) != "t1,t2" {
		t.Fatal(keys(c1))
	}
	seen := map[string]bool{"t1": true, "t2": true}
	cases := map[string]string{
		"shrink":        meta + turnLines("t1", "one"),
		"rewrite head":  strings.Replace(meta, "/w", "/x", 1) + turnLines("t1", "one") + turnLines("t2", "two") + turnLines("t3", "three"),
		"same size new": meta + turnLines("t1", "one") + turnLines("t9", "nin"),
	}
	for name, content := range cases {
		write(t, p, content, false)
		c, err := CaptureFile(p, c1.Cursor, c1.Meta, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !c.Rewritten {
			t.Errorf("%s: rewrite not noticed", name)
		}
		var fresh []string
		for _, tr := range c.Turns {
			if !seen[tr.Key] {
				fresh = append(fresh, tr.Key)
			}
		}
		want := map[string]string{"shrink": "", "rewrite head": "t3", "same size new": "t9"}[name]
		if strings.Join(fresh, ",") != want {
			t.Errorf("%s: new turns %v, want %q", name, fresh, want)
		}
	}
	// Another file at the same path (replaced; the inode may be reused, the
	// first bytes differ).
	os.Remove(p)
	write(t, p, strings.Replace(meta, "s1", "s2", 1)+turnLines("t1", "one")+turnLines("t2", "two"), false)
	if c, _ := CaptureFile(p, c1.Cursor, c1.Meta, Options{}); !c.Rewritten {
		t.Error("replaced file not noticed")
	}
}

// Unusable lines become counted placeholders, never a failure, never a gap.
func TestPlaceholders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	long := `{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("x", 5000) + `"}]}}` + "\n"
	bad := "{\"timestamp\":\"t\",\"type\":\"event_msg\",\"payload\":{\"type\":\"user_message\",\"message\":\"\xff\xfe\"}}\n"
	trunc := `{"timestamp":"t","type":"event_msg","payload":{"type":"age` + "\n"
	write(t, p, meta+turnLines("t1", "one")+long+bad+trunc+turnLines("t2", "two"), false)
	c, err := CaptureFile(p, Cursor{}, nil, Options{MaxLineBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, ph := range c.Placeholders {
		kinds = append(kinds, ph.Kind)
	}
	if strings.Join(kinds, ",") != "too_long,invalid_utf8,invalid_json" || keys(c) != "t1,t2" {
		t.Fatalf("placeholders %v turns %q", kinds, keys(c))
	}
	if c.Placeholders[0].Size != int64(len(long)-1) {
		t.Fatalf("placeholder size %d, want %d", c.Placeholders[0].Size, len(long)-1)
	}
}

func TestForkSkipsCopiedHistory(t *testing.T) {
	data, err := os.ReadFile("../../testdata/rollouts/0.128.0/fork-b.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c := Assemble(data, Options{})
	if len(c.Turns) != 1 || c.Turns[0].User != "child turn" || c.Meta.ForkedFromID == "" {
		t.Fatalf("fork turns %+v meta %+v", c.Turns, c.Meta)
	}
}

func TestExitCodeFormats(t *testing.T) {
	for in, want := range map[string]int{
		"Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 2\nOutput:\nx": 2,
		"Exit code: 0\nWall time: 0 seconds\nOutput:\nok":                           0,
		`{"output":"x","metadata":{"exit_code":127,"duration_seconds":0.1}}`:        127,
		"Process exited with code -1\n":                                             -1,
	} {
		got, ok := ExitCode(in)
		if !ok || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "exit code 3", "Process exited with code x", "{not json"} {
		if _, ok := ExitCode(in); ok {
			t.Errorf("%q parsed as an exit code", in)
		}
	}
}

func TestParsePatch(t *testing.T) {
	body := "*** Begin Patch\n*** Add File: a/new.go\n+package a\n+\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-x\n+y\n*** Delete File: d.txt\n*** End Patch\n"
	got := parsePatch(body)
	if len(got) != 3 || got[0].Content != "package a\n\n" || got[1].MoveTo != "c.txt" || got[2].Op != "delete" {
		t.Fatalf("%+v", got)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range seedLines(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.ReplaceAll(b, []byte{'\n'}, []byte{' '})
		r := parseLine(Line{Data: b, Size: int64(len(b))})
		if r.Placeholder == "" && r.Type == "" {
			t.Fatalf("a parsed record without a type: %q", b)
		}
		// The assembler never panics on any line.
		Assemble(append(b, '\n'), Options{})
	})
}

func FuzzExitCode(f *testing.F) {
	for _, s := range []string{"Process exited with code 0", "Exit code: 1\n", `{"metadata":{"exit_code":3}}`, "", "Exit code: -"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if code, ok := ExitCode(s); ok && !strings.Contains(s, "exit") && !strings.Contains(s, "Exit") {
			t.Fatalf("exit code %d from %q", code, s)
		}
	})
}

func FuzzParsePatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n")
	f.Add("*** Update File: b\n*** Move to: c\n@@\n-a\n+b\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, pf := range parsePatch(s) {
			if pf.Op != "add" && pf.Op != "update" && pf.Op != "delete" {
				t.Fatalf("op %q", pf.Op)
			}
			if !strings.Contains(s, pf.Path) {
				t.Fatalf("path %q not in input", pf.Path)
			}
		}
	})
}

// seedLines are real lines from the recorded rollouts (the fuzz seed corpus).
func seedLines(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("../../testdata/rollouts/*/*.jsonl")
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		for i, l := range bytes.Split(data, []byte{'\n'}) {
			if i%7 == 0 && len(l) < 4000 {
				out = append(out, l)
			}
		}
	}
	return out
}

// The fast envelope scanner agrees with encoding/json on every valid line.
func FuzzEnvelope(f *testing.F) {
	for _, s := range seedLines(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"type":"a\"b","payload":{"x":"}"},"timestamp":"t\\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, typ, _, payload, ok := scanEnvelope(b)
		if !ok || !json.Valid(b) || !utf8.Valid(b) { // parseLine checks UTF-8 first
			return
		}
		// encoding/json also takes keys in other letter cases; Codex writes
		// them exactly, and the scanner reads only exact keys.
		low := bytes.ToLower(b)
		for _, k := range []string{"timestamp", "type", "payload"} {
			if bytes.Count(low, []byte(`"`+k+`"`)) != bytes.Count(b, []byte(`"`+k+`"`)) {
				return
			}
		}
		var env envelope
		if err := json.Unmarshal(b, &env); err != nil {
			return
		}
		if env.Type != typ || env.Timestamp != ts || !bytes.Equal(bytes.TrimSpace(env.Payload), bytes.TrimSpace(payload)) {
			t.Fatalf("scanner (%q, %q, %q) vs json (%q, %q, %q)", ts, typ, payload, env.Timestamp, env.Type, env.Payload)
		}
	})
}

// A tool call remembers how many assistant texts came before it, so the
// turn can be replayed in the order it happened.
func TestToolCallAfter(t *testing.T) {
	data := meta + line("event_msg", `{"type":"task_started","turn_id":"t1"}`) +
		line("event_msg", `{"type":"user_message","message":"go"}`) +
		line("response_item", `{"type":"function_call","call_id":"c0","name":"shell","arguments":"{}"}`) +
		line("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"looking"}]}`) +
		line("response_item", `{"type":"function_call","call_id":"c1","name":"shell","arguments":"{}"}`) +
		line("response_item", `{"type":"function_call_output","call_id":"c1","output":"x"}`) +
		line("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`) +
		line("event_msg", `{"type":"task_complete","turn_id":"t1"}`)
	c := Assemble([]byte(data), Options{})
	if len(c.Turns) != 1 || len(c.Turns[0].Tools) != 2 {
		t.Fatalf("turns: %+v", c.Turns)
	}
	if a, b := c.Turns[0].Tools[0].After, c.Turns[0].Tools[1].After; a != 0 || b != 1 {
		t.Fatalf("after: %d, %d; want 0, 1", a, b)
	}
}

// A message sent while a task ran (steered into it in 0.169, queued into
// it in 0.128) is a turn of its own, keyed after the task; the one before
// it is closed, unanswered or not. Read in two parts, cut after each line,
// the keys and texts are the same as read whole.
func TestMessageSentWhileTaskRan(t *testing.T) {
	user169 := func(text string) string {
		return line("event_msg", `{"type":"item_completed","turn_id":"t2","item":{"type":"UserMessage","id":"u","content":[{"type":"Text","text":"`+text+`"}]}}`)
	}
	reply := func(text string) string {
		return line("response_item", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"`+text+`"}]}`)
	}
	for _, tc := range []struct {
		name string
		task string
	}{
		// 0.169: the steer replaced the slow request, so the first message has no answer.
		{"0.169 steer", line("event_msg", `{"type":"task_started","turn_id":"t2"}`) + user169("first") + user169("second") + reply("re second") +
			line("event_msg", `{"type":"task_complete","turn_id":"t2"}`)},
		// 0.128: the queued message is taken by the running task, each answered.
		{"0.128 queued", line("event_msg", `{"type":"task_started","turn_id":"t2"}`) +
			line("event_msg", `{"type":"user_message","message":"first"}`) + reply("re first") +
			line("event_msg", `{"type":"user_message","message":"second"}`) + line("event_msg", `{"type":"user_message","message":"second"}`) +
			reply("re second") + line("event_msg", `{"type":"task_complete","turn_id":"t2"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := meta + turnLines("t1", "zero") + tc.task
			whole := Assemble([]byte(full), Options{})
			want := "t1 zero [ok zero] true|t2 first " + map[bool]string{true: "[]", false: "[re first]"}[strings.Contains(tc.name, "steer")] + " true|t2/2 second [re second] true"
			if got := summary(whole.Turns); got != want {
				t.Fatalf("whole:\n%s\nwant\n%s", got, want)
			}
			for cut := len(meta); cut < len(full); cut++ {
				if full[cut-1] != '\n' {
					continue
				}
				p := filepath.Join(t.TempDir(), "r.jsonl")
				write(t, p, full[:cut], false)
				c1, err := CaptureFile(p, Cursor{}, nil, Options{})
				if err != nil {
					t.Fatal(err)
				}
				write(t, p, full[cut:], true)
				c2, err := CaptureFile(p, c1.Cursor, c1.Meta, Options{})
				if err != nil {
					t.Fatal(err)
				}
				// What the ledger keeps: the last version of each key.
				byKey := map[string]Turn{}
				var order []string
				for _, tt := range append(c1.Turns, c2.Turns...) {
					if _, ok := byKey[tt.Key]; !ok {
						order = append(order, tt.Key)
					}
					byKey[tt.Key] = tt
				}
				var merged []Turn
				for _, k := range order {
					merged = append(merged, byKey[k])
				}
				if got := summary(merged); got != want {
					t.Fatalf("cut at %d:\n%s\nwant\n%s", cut, got, want)
				}
			}
		})
	}
}

func summary(ts []Turn) string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s %s %v %v", t.Key, t.User, t.Assistant, t.Complete))
	}
	return strings.Join(out, "|")
}

// Codex killed between the user's message and its prompt event (0.128's
// user_message, 0.169's UserMessage item): the message is the task's last
// line, and it is still a turn — open, its prompt the message. Found by the
// 20-minute chaos run on both versions (a prompt in the rollout, in no sink).
func TestKilledBeforePromptEvent(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/rollouts/*/exec-tools.jsonl")
	if len(files) < 2 {
		t.Fatalf("recorded rollouts: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			whole := Assemble(data, Options{})
			if len(whole.Turns) == 0 {
				t.Fatal("no turns in the recorded rollout")
			}
			prompt := whole.Turns[0].User
			// Cut after the first user-role line that holds the prompt.
			cut := -1
			for off := 0; off < len(data); {
				n := bytes.IndexByte(data[off:], '\n')
				if n < 0 {
					break
				}
				l := data[off : off+n]
				if bytes.Contains(l, []byte(`"type":"response_item"`)) && bytes.Contains(l, []byte(`"role":"user"`)) &&
					bytes.Contains(l, []byte(strconv.Quote(prompt)[1:len(strconv.Quote(prompt))-1])) {
					cut = off + n + 1
					break
				}
				off += n + 1
			}
			if cut < 0 {
				t.Fatalf("no user message line holds %q", prompt)
			}
			c := Assemble(data[:cut], Options{})
			if len(c.Turns) != 1 || c.Turns[0].User != prompt || c.Turns[0].Complete || c.Turns[0].Key != whole.Turns[0].Key {
				t.Fatalf("cut after the user's message: %+v, want one open turn %q keyed %s", c.Turns, prompt, whole.Turns[0].Key)
			}
		})
	}
}

// A tool call is said as a person would say it, never as its JSON (issue 51).
func TestToolLine(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: notes/a.md\n+one\n+two\n*** Update File: notes/b.md\n@@\n-old\n+new\n+more\n*** Delete File: notes/c.md\n*** End Patch\n"
	for _, tc := range []struct {
		call ToolCall
		want string
	}{
		{ToolCall{Name: "exec_command", Command: "go test ./..."}, "go test ./..."},
		{ToolCall{Name: "apply_patch", Input: patch}, "added notes/a.md (+2); edited notes/b.md (+2 −1); deleted notes/c.md"},
		{ToolCall{Name: "update_plan", Input: `{"plan":[{"step":"Run the tests","status":"pending"},{"step":"Look","status":"completed"},{"step":"Fix","status":"in_progress"}]}`},
			"plan: [ ] Run the tests; [x] Look; [>] Fix"},
		{ToolCall{Name: "create_goal", Input: `{"objective":"Ship it","token_budget":100}`}, "create_goal (objective: Ship it, token_budget: 100)"},
		{ToolCall{Name: "update_plan", Input: `{"plan":[{"step":"cut`}, "update_plan"},
		{ToolCall{Name: "apply_patch", Summary: "edited x (+1 −0)", Input: "*** Begin"}, "edited x (+1 −0)"},
	} {
		if got := ToolLine(tc.call); got != tc.want {
			t.Errorf("ToolLine(%s) = %q, want %q", tc.call.Name, got, tc.want)
		}
	}
}
