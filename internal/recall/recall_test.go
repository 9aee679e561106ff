package recall

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/redact/redacttest"
	"cx/internal/rollout"
)

func testArchive(t *testing.T) (*Archive, string) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return NewArchive(db, home), home
}

func exit(n int) *int { return &n }

// archive stores and indexes one generation, as the local sink does.
func archive(t *testing.T, a *Archive, sid string, gen int, cwd string, turns []rollout.Turn) {
	t.Helper()
	ctx := context.Background()
	data, _ := json.Marshal(turns)
	err := a.db.Tx(ctx, func(tx *ledger.Tx) error {
		if err := tx.InsertGeneration(ctx, ledger.Generation{SessionID: sid, Generation: gen, Status: ledger.Committed, EndReason: "exit", Turns: len(turns), EndedAt: tx.Now()}); err != nil {
			return err
		}
		if err := tx.PutArchive(ctx, sid, gen, string(data), "", ""); err != nil {
			return err
		}
		return IndexGeneration(ctx, tx, sid, gen, turns, cwd, a.projects.Of(cwd), tx.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
}

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

// Archives stored before the index are indexed once, by the backfill the
// migration asks for; a second backfill does nothing.
func TestBackfillIndexesOldArchivesOnce(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// As a ledger from before: archives, and the flag migration 8 leaves.
	for i := range 450 { // more than two batches
		data, _ := json.Marshal([]rollout.Turn{{Key: "t", User: "old archive number w" + itoa(i)}})
		err := db.Tx(ctx, func(tx *ledger.Tx) error {
			return tx.PutArchive(ctx, "s"+itoa(1000+i), 1, string(data), "", "")
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutMeta(ctx, ledger.RecallBackfillKey, "pending") }); err != nil {
		t.Fatal(err)
	}
	if n, err := Backfill(ctx, db, home); n != 450 || err != nil {
		t.Fatalf("backfill: %d %v", n, err)
	}
	a := NewArchive(db, home)
	hits, err := a.Search(ctx, Query{Text: "w449"})
	if err != nil || len(hits) != 1 || hits[0].Session != "s1449" {
		t.Fatalf("after backfill: %+v %v", hits, err)
	}
	if n, err := Backfill(ctx, a.db, home); n != 0 || err != nil {
		t.Errorf("second backfill: %d %v", n, err)
	}
	var rows int
	_ = rawLedger(t, home).QueryRow(`SELECT count(*) FROM recall_turns`).Scan(&rows)
	if rows != 450 {
		t.Errorf("%d index rows, want 450", rows)
	}
	if _, err := os.Stat(ledger.Path(home)); err != nil {
		t.Fatal(err)
	}
}

// Per-prompt recall with a remote: the remote's items merged with the
// archive's (best of each in turn); a remote that fails or is late leaves
// the archive's items and says so, within its wait; none for a trivial
// prompt (the remote is not even asked).
func TestRecallWithRemote(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "s1", 1, proj, []rollout.Turn{
		{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the quokkaberry deploy fail?", Assistant: []string{"the zebrafinch cache is stale"}},
	})
	asked := 0
	memory := Item{Source: "openviking", Session: "viking://user/u/memories/deploy.md", Score: 0.8, Text: "[OpenViking memory viking://user/u/memories/deploy.md]\nclear the zebrafinch cache before a quokkaberry deploy"}
	remote := func(ctx context.Context, q string, n int) ([]Item, error) { asked++; return []Item{memory}, nil }
	items, err := a.Recall(ctx, PromptRequest{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: remote})
	if err != nil || len(items) != 2 || items[0].Source != "local" || items[1] != memory {
		t.Fatalf("merged: %+v, %v", items, err)
	}
	failing := func(ctx context.Context, q string, n int) ([]Item, error) { return nil, errors.New("503 unavailable") }
	items, err = a.Recall(ctx, PromptRequest{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: failing})
	if !errors.Is(err, ErrRemote) || len(items) != 1 || items[0].Session != "s1" {
		t.Fatalf("failing remote: %+v, %v", items, err)
	}
	slow := func(ctx context.Context, q string, n int) ([]Item, error) { <-ctx.Done(); return nil, ctx.Err() }
	start := time.Now()
	items, err = a.Recall(ctx, PromptRequest{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: slow, RemoteWait: 200 * time.Millisecond})
	if !errors.Is(err, ErrRemote) || len(items) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("slow remote: %+v, %v after %v", items, err, time.Since(start))
	}
	asked = 0
	if items, _ := a.Recall(ctx, PromptRequest{Prompt: "thanks!", Project: proj, Remote: remote}); len(items) != 0 || asked != 0 {
		t.Fatalf("trivial prompt: %+v, remote asked %d times", items, asked)
	}
}

// A ledger a writer has yet to migrate (schema 13, before turns had their
// length) is refused by per-prompt recall with one clear error; once
// migrated, recall reads it, the turns indexed before ranked by lengths read
// from their text.
func TestPromptReadWaitsForTheUpgrade(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "s1", 1, proj, []rollout.Turn{
		{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the quokkaberry deploy fail?", Assistant: []string{"the zebrafinch cache is stale"}},
	})
	raw, err := sql.Open("sqlite", ledger.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`ALTER TABLE recall_turns DROP COLUMN chars; PRAGMA user_version = 13`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := ledger.Open(ctx, home, ledger.Prompt, ledger.Options{}); err == nil || !strings.Contains(err.Error(), "older schema") {
		t.Fatalf("schema 13: %v, want the older schema refused", err)
	}
	w, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{}) // a writer: migrates
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	db, err := ledger.Open(ctx, home, ledger.Prompt, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	items, err := NewArchive(db, home).Recall(ctx, PromptRequest{Prompt: "how do I fix the quokkaberry deploy?", Project: proj})
	if err != nil || len(items) != 1 || items[0].Session != "s1" {
		t.Fatalf("after the upgrade: %+v, %v", items, err)
	}
}

// fit: turns next to each other in one session are one passage in their
// order under one heading (the later ones under their turn alone, which is
// what the budget counts), best passage first; a remote's memory stands
// alone; what does not fit leaves room for what does.
func TestFitGivesNeighboursAsOnePassage(t *testing.T) {
	local := func(session string, turn int, body string) Item {
		return Item{Source: "local", Session: session, Turn: turn, head: fmt.Sprintf("[%s %d]\n", session, turn), body: body}
	}
	far := Item{Source: "openviking", Session: "viking://m", Text: "memory"}
	texts := func(items []Item) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Text)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		local  []Item
		far    []Item
		budget int
		want   []string
	}{
		{"the turn after the best one joins it", []Item{local("a", 4, "x"), local("b", 9, "y"), local("a", 5, "z")}, nil, 100,
			[]string{"[a 4]\nx", "[turn 5]\nz", "[b 9]\ny"}},
		{"a turn before comes first and takes the heading", []Item{local("a", 5, "z"), local("a", 4, "x")}, nil, 100,
			[]string{"[a 4]\nx", "[turn 5]\nz"}},
		{"another session's turn of that number stands alone", []Item{local("a", 4, "x"), local("b", 5, "y")}, nil, 100,
			[]string{"[a 4]\nx", "[b 5]\ny"}},
		{"a short heading is what the budget counts", []Item{local("a", 4, "xxxx"), local("c", 1, "yyyyyyyyyyyy"), local("a", 5, "zz")}, nil, len("[a 4]\nxxxx") + len("[turn 5]\nzz"),
			[]string{"[a 4]\nxxxx", "[turn 5]\nzz"}},
		{"remote memories in turn with the local ones", []Item{local("a", 4, "x"), local("a", 5, "z")}, []Item{far}, 100,
			[]string{"[a 4]\nx", "[turn 5]\nz", "memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fit(tc.local, tc.far, tc.budget)
			if !slices.Equal(texts(got), tc.want) {
				t.Fatalf("fit = %q, want %q", texts(got), tc.want)
			}
		})
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

// rawLedger is a plain SQLite handle on home's ledger, for a test to read
// what cx's own API does not show (closed with the test).
func rawLedger(t *testing.T, home string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ledger.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A recalled turn does not say again the plan, commands and files the
// start block gave (issue 51); its prompt and reply stay.
func TestWithoutSaid(t *testing.T) {
	said := continuity.Said{Plan: map[string]bool{"Run the tests": true, "Write the migration": true}, Commands: map[string]bool{"go test ./...": true},
		Files: map[string]bool{"db/m.sql": true}}
	body := "› migrate the invoices\n‹ done\n• plan: [>] Write the migration; [ ] Run the tests\n$ go test ./... (exit 1)\n$ make lint (exit 0)\nfiles: db/m.sql, README.md"
	want := "› migrate the invoices\n‹ done\n$ make lint (exit 0)\nfiles: README.md"
	if got := withoutSaid(said, body); got != want {
		t.Errorf("withoutSaid:\n%s\nwant\n%s", got, want)
	}
	if got := withoutSaid(continuity.Said{}, body); got != body {
		t.Errorf("with nothing said the body changed:\n%s", got)
	}
}
