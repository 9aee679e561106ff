package search

import (
	"context"
	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/redact/redacttest"
	"cx/internal/rollout"
	"cx/internal/testing/recalltest"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func testArchive(t *testing.T) (*Archive, string) {
	t.Helper()
	db, home := recalltest.Ledger(t)
	return NewArchive(db, home), home
}

// archive stores and indexes one generation, as the local sink does.
func archive(t *testing.T, a *Archive, sid string, gen int, cwd string, turns []rollout.Turn) {
	t.Helper()
	recalltest.Archive(t, a.db, a.projects, sid, gen, cwd, turns)
}

var exit, rawLedger = recalltest.Exit, recalltest.Raw

func TestSearchFindsWhatATurnSaidAndDid(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	projA, projB := t.TempDir(), t.TempDir()
	archive(t, a, "s1", 1, projA, []rollout.Turn{
		{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why is the parser test flaky?", Assistant: []string{"it races on the tokenizer cache"}},
		{Key: "t2", Time: "2026-01-02T10:05:00Z", User: "fix it", Tools: []rollout.ToolCall{{Name: "shell", Command: "go test ./parser -run TestFlaky", ExitCode: exit(1)}},
			Files: []rollout.FileEdit{{Path: "parser/cache_guard.go", Op: "add"}}},
	})
	archive(t, a, "s1", 2, projA, []rollout.Turn{{Key: "t3", Time: "2026-03-01T09:00:00Z", User: "the staging codename is bluefinch"}})
	archive(t, a, "s2", 1, projB, []rollout.Turn{{Key: "u1", Time: "2026-03-02T09:00:00Z", User: "another project mentions the parser too"}})

	cases := []struct {
		name, query, project string
		since                time.Time
		want                 []string // session/turn of the hits, best first
	}{
		{"prompt word", "bluefinch", "", time.Time{}, []string{"s1/3"}},
		{"reply", "tokenizer", "", time.Time{}, []string{"s1/1"}},
		{"command", "TestFlaky", "", time.Time{}, []string{"s1/2"}},
		{"exit code", `"exit 1"`, "", time.Time{}, []string{"s1/2"}},
		{"file", "cache_guard", "", time.Time{}, []string{"s1/2+1"}}, // the turn before holds "cache"
		{"every project", "parser", "", time.Time{}, []string{"s1/1", "s2/1", "s1/2"}},
		{"one project", "parser", projB, time.Time{}, []string{"s2/1"}},
		{"since", "parser", "", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), []string{"s2/1"}},
		// A question's hits bring the turn after a match (the answer
		// follows the question), after the turns that match.
		{"punctuation in plain words", "parser-test flaky?", "", time.Time{}, []string{"s1/1+2"}},
		// The fix (both words, and after the question) ranks first, the
		// question and the turn after the fix in its passage (a hit next to a
		// better one joins it); then the other project's mention.
		{"a question, not every word", "Why was the parser test failing?", "", time.Time{}, []string{"s1/2+1+3", "s2/1"}},
		{"word forms", "tokenizers racing", "", time.Time{}, []string{"s1/1+2"}},
		{"FTS operators", "bluefinch OR tokenizer", "", time.Time{}, []string{"s1/1", "s1/3"}},
		{"prefix", "bluefin*", "", time.Time{}, []string{"s1/3"}},
		{"column", "files:cache_guard", "", time.Time{}, []string{"s1/2"}},
		{"nothing", "zanzibar", "", time.Time{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits, err := a.Search(ctx, Query{Text: c.query, Project: c.project, Since: c.since, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				p := h.Session + "/" + itoa(h.Turn)
				for _, t := range h.Turns[min(1, len(h.Turns)):] {
					p += "+" + itoa(t)
				}
				got = append(got, p)
				if !(strings.Contains(h.Snippet, "«") || strings.HasPrefix(h.Snippet, "(after turn ")) || h.More != "cx ctl show "+h.Session+" --turn "+itoa(h.Turn) {
					t.Errorf("hit %+v: no marked snippet or no way to see more", h)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				if c.name == "every project" || c.name == "FTS operators" {
					// ranking among equals may differ: compare as sets
					if sortedJoin(got) == sortedJoin(c.want) {
						return
					}
				}
				t.Errorf("%q: hits %v, want %v", c.query, got, c.want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func sortedJoin(s []string) string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return strings.Join(c, " ")
}

func TestBadQueriesGetOneLine(t *testing.T) {
	a, _ := testArchive(t)
	archive(t, a, "s1", 1, "", []rollout.Turn{{Key: "t1", User: "hello world"}})
	for _, q := range []string{"", "   ", "(a OR", "a AND", "NEAR(", "--- ...", strings.Repeat("word ", 2100)} {
		_, err := a.Search(context.Background(), Query{Text: q})
		if !errors.Is(err, ErrQuery) {
			t.Errorf("%.30q: err %v, want ErrQuery", q, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "SQL") || len(msg) > 200 {
			t.Errorf("%.30q: error is not one clear line: %q", q, msg)
		}
	}
}

// Every secret of the redaction table, in a prompt, a reply, a command and
// its output, is neither findable nor shown, and is nowhere in the ledger's
// index tables.
func TestSecretsNeverReachTheIndex(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	var turns []rollout.Turn
	for i, s := range redacttest.Secrets {
		turns = append(turns, rollout.Turn{Key: "k" + itoa(i), User: "marker " + s.In, Assistant: []string{s.In},
			Tools: []rollout.ToolCall{{Name: "shell", Command: "echo " + s.In, Output: s.In}}})
	}
	archive(t, a, "s1", 1, "", turns)
	for i, s := range redacttest.Secrets {
		hits, err := a.Search(ctx, Query{Text: `"` + strings.ReplaceAll(s.Secret, `"`, `""`) + `"`, Limit: 50})
		if err != nil && !errors.Is(err, ErrQuery) {
			t.Fatal(err)
		}
		if len(hits) > 0 {
			t.Errorf("%s: the secret is findable: %+v", s.Name, hits)
		}
		v, err := a.Turn(ctx, "s1", i+1)
		if err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(v); strings.Contains(string(out)+v.Text(), s.Secret) {
			t.Errorf("%s: shown in turn view", s.Name)
		}
	}
	// The text FTS5 keeps (its content table), read back whole.
	rows, err := rawLedger(t, home).QueryContext(ctx, `SELECT prompt || reply || commands || files FROM recall_text`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var text string
		_ = rows.Scan(&text)
		for _, s := range redacttest.Secrets {
			if strings.Contains(text, s.Secret) {
				t.Errorf("%s: in the index", s.Name)
			}
		}
	}
	_ = home
}

func TestTurnAndSessionViews(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	archive(t, a, "s1", 1, "/w", []rollout.Turn{{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "first"}})
	archive(t, a, "s1", 2, "/w", []rollout.Turn{{Key: "t2", Time: "2026-01-03T10:00:00Z", User: "second " + strings.Repeat("x", 20000),
		Tools: []rollout.ToolCall{{Name: "shell", Command: "ls", ExitCode: exit(0), Output: "a\nb\n"}}}})
	v, err := a.Turn(ctx, "s1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Generation != 2 || v.Of != 2 || !strings.HasPrefix(v.Prompt, "second") || len(v.Prompt) > maxShown+100 || !strings.Contains(v.Prompt, "more bytes") {
		t.Errorf("turn view: gen %d of %d prompt %d bytes", v.Generation, v.Of, len(v.Prompt))
	}
	if text := v.Text(); !strings.Contains(text, "$ ls  (exit 0)\na\nb\n") {
		t.Errorf("turn text:\n%s", text)
	}
	for _, c := range []struct {
		id string
		n  int
	}{{"s1", 3}, {"s1", 0}, {"nope", 1}} {
		if _, err := a.Turn(ctx, c.id, c.n); !errors.Is(err, ErrNotFound) {
			t.Errorf("turn %s/%d: %v, want ErrNotFound", c.id, c.n, err)
		}
	}
	sv, err := a.Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sv.TotalTurns != 2 || len(sv.Turns) != 2 || sv.Turns[0].Prompt != "first" {
		t.Errorf("session view: %+v", sv)
	}
	if _, err := a.Session(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

// A hit of a question names its passage: its own turn first, then the
// hits next to it (the turn after a match is one, the answer following
// the question) and the turns next to those that hold a word of the
// question, at most three — never a neighbour that shares no word and is
// not a hit.
func TestHitsNamePassages(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "c1", 1, proj, []rollout.Turn{
		{Key: "t1", User: "we went camping at the lake last summer"},
		{Key: "t2", User: "which lake was that again?", Assistant: []string{"the one with the pine trees"}},
		{Key: "t3", User: "Melanie painted a sunrise over the lake", Assistant: []string{"lovely"}},
		{Key: "t4", User: "I bought new running shoes"},
		{Key: "t5", User: "the sunrise painting hangs in the hall"},
	})
	archive(t, a, "c2", 1, proj, []rollout.Turn{
		{Key: "u1", User: "the weather was grey all week"},
		{Key: "u2", User: "Melanie showed me her watercolours"},
		{Key: "u3", User: "they were lovely"},
	})
	for _, c := range []struct {
		query, want string
	}{
		{"what did Melanie paint over the lake?", "c1 3 [3 4 5]"}, // 4 follows the best match; 5 holds "paint"; 2 finds the passage full
		{"Melanie watercolours", "c2 2 [2 3]"},                    // u1 holds neither word
	} {
		hits, err := a.Search(ctx, Query{Text: c.query, Project: proj, Limit: 1})
		if err != nil || len(hits) != 1 {
			t.Fatalf("%q: hits %+v, %v", c.query, hits, err)
		}
		if h := hits[0]; fmt.Sprint(h.Session, " ", h.Turn, " ", h.Turns) != c.want {
			t.Errorf("%q: hit %s turn %d names %v, want %s", c.query, h.Session, h.Turn, h.Turns, c.want)
		}
	}
	// A lookup in FTS5's syntax names no passage.
	hits, err := a.Search(ctx, Query{Text: "painted OR lake", Project: proj, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if len(h.Turns) > 0 {
			t.Errorf("a syntax query's hit names a passage: %+v", h)
		}
	}
}

// A project's search weighs a word by its rarity in that project: a
// word the project rarely uses outranks one it uses everywhere, however
// the other projects of the index use them.
func TestProjectSearchWeighsItsOwnWords(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	proj, other := t.TempDir(), t.TempDir()
	var mine, theirs []rollout.Turn
	for i := 0; i < 30; i++ {
		mine = append(mine, rollout.Turn{Key: fmt.Sprint("m", i), User: fmt.Sprintf("the kestrel service, change %d", i)})
		theirs = append(theirs, rollout.Turn{Key: fmt.Sprint("x", i), User: fmt.Sprintf("the ingest queue holds batch %d", i)})
	}
	mine = append(mine,
		rollout.Turn{Key: "m-q", User: "the ingest queue of the kestrel service stalls"},
		rollout.Turn{Key: "m-k", User: "kestrel kestrel kestrel: the name of the service"})
	archive(t, a, "mine", 1, proj, mine)
	archive(t, a, "theirs", 1, other, theirs)
	if _, err := recall.ReadWindow(ctx, a.db, home, a.projects.Of(proj), nil); err != nil { // as the index's upkeep keeps it
		t.Fatal(err)
	}
	hits, err := a.Search(ctx, Query{Text: "kestrel ingest", Project: proj, Limit: 1})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %+v, %v", hits, err)
	}
	if hits[0].Turn != 31 {
		t.Fatalf("best hit is turn %d (%s), want 31: the turn with the word rare in this project", hits[0].Turn, hits[0].Snippet)
	}
}

// A project's candidates come from its window when the window is the
// project's whole and current (local.go): the hits are those the index's
// match gives, a span (--since) kept; a turn indexed after the window was
// written is found all the same (the index's match finds it until the
// window is read again).
func TestWindowCandidates(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	proj, other := t.TempDir(), t.TempDir()
	topics := []string{"the parser cache races on the tokenizer", "deploy the billing service to staging", "the login form loses its session cookie",
		"rename the export flag to --format", "the nightly backup job fills the disk"}
	var turns []rollout.Turn
	for i := range 40 {
		turns = append(turns, rollout.Turn{Key: fmt.Sprint("t", i), Time: fmt.Sprintf("2026-01-%02dT10:00:00Z", 1+i%28),
			User: fmt.Sprintf("%s, take %d", topics[i%len(topics)], i), Assistant: []string{"looked at it"}})
	}
	archive(t, a, "s1", 1, proj, turns[:20])
	archive(t, a, "s2", 1, proj, turns[20:])
	archive(t, a, "o1", 1, other, []rollout.Turn{{Key: "o", User: "the parser cache of another project races too"}})
	project := a.projects.Of(proj)
	whole := func() bool {
		t.Helper()
		run, err := a.newRun(ctx, ledger.RecallQuery{Project: project})
		if err != nil {
			t.Fatal(err)
		}
		return run.whole
	}
	since := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	queries := []Query{
		{Text: "why does the parser cache race?"}, {Text: "when did we deploy billing to staging?"},
		{Text: "the backup job and the disk"}, {Text: "what was the export flag renamed to?"},
		{Text: "the login cookie", Since: since},
	}
	results := func() []string {
		t.Helper()
		var out []string
		for _, q := range queries {
			q.Project, q.Limit = proj, 5
			hits, err := a.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				if !q.Since.IsZero() && h.Time < q.Since.Format(time.RFC3339) {
					t.Errorf("%q: hit %s/%d at %s, before --since", q.Text, h.Session, h.Turn, h.Time)
				}
				got = append(got, fmt.Sprintf("%s/%d%v", h.Session, h.Turn, h.Turns))
			}
			out = append(out, q.Text+": "+strings.Join(got, " "))
		}
		return out
	}
	if whole() {
		t.Fatal("candidates from a window before there is one")
	}
	byIndex := results()
	if _, err := recall.ReadWindow(ctx, a.db, home, project, nil); err != nil { // as the index's upkeep keeps it
		t.Fatal(err)
	}
	if !whole() {
		t.Fatal("a current window of 40 turns is not the project's whole")
	}
	if byWindow := results(); strings.Join(byWindow, "\n") != strings.Join(byIndex, "\n") {
		t.Errorf("hits from the window's candidates:\n%s\nfrom the index's:\n%s", strings.Join(byWindow, "\n"), strings.Join(byIndex, "\n"))
	}

	archive(t, a, "s3", 1, proj, []rollout.Turn{{Key: "z", User: "the zeppelin mock server answers slowly"}})
	for _, current := range []bool{false, true} {
		if current {
			if _, err := recall.ReadWindow(ctx, a.db, home, project, nil); err != nil {
				t.Fatal(err)
			}
		}
		if whole() != current {
			t.Fatalf("window current %v: its candidates used %v", current, !current)
		}
		hits, err := a.Search(ctx, Query{Text: "why is the zeppelin mock slow?", Project: proj, Limit: 5})
		if err != nil || len(hits) == 0 || hits[0].Session != "s3" {
			t.Fatalf("window current %v: hits %+v, %v; want s3's turn first", current, hits, err)
		}
	}
}

// A project's search weighs a turn's coverage of the question as a
// passage's (as per-prompt recall does): a word the turn next to it in its
// session holds counts for a share, so of the turns that say "weather",
// the one next to the turn about the hiking trip ranks first for "the
// weather on the hiking trip" — it need not repeat the trip's words.
func TestProjectSearchWeighsThePassage(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "trip", 1, proj, []rollout.Turn{
		{Key: "t1", User: "the weather was perfect there, sunny and warm all through the week"},
		{Key: "t2", User: "that was the hiking trip to the lake in June"},
	})
	for i := 0; i < 8; i++ { // the same word, in other conversations, in fewer words
		archive(t, a, fmt.Sprint("o", i), 1, proj, []rollout.Turn{
			{Key: fmt.Sprint("o", i, "a"), User: fmt.Sprintf("the weather was grey here, rain on day %d", i)},
			{Key: fmt.Sprint("o", i, "b"), User: fmt.Sprintf("we cooked soup and read books, evening %d", i)},
		})
	}
	if _, err := recall.ReadWindow(ctx, a.db, home, a.projects.Of(proj), nil); err != nil {
		t.Fatal(err)
	}
	pq, err := recall.ParseQuestion("what was the weather like on the hiking trip?")
	if err != nil {
		t.Fatal(err)
	}
	run, err := a.newRun(ctx, ledger.RecallQuery{Project: a.projects.Of(proj)})
	if err != nil {
		t.Fatal(err)
	}
	found, err := a.search(ctx, pq, ledger.RecallQuery{Match: pq.Expr, Project: a.projects.Of(proj), Limit: 20, NoSnippets: true}, localPool, run)
	if err != nil {
		t.Fatal(err)
	}
	best := -1 // the best-ranked turn that says "weather"
	for k, h := range found {
		if h.Turn == 1 {
			best = k
			break
		}
	}
	if best < 0 || found[best].SessionID != "trip" {
		var got []string
		for _, h := range found {
			got = append(got, fmt.Sprintf("%s/%d %.3f", h.SessionID, h.Turn, h.Score))
		}
		t.Fatalf("the first turn saying weather is not the trip's: %v", got)
	}
}
