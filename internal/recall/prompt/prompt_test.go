package prompt

import (
	"context"
	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/recall/search"
	"cx/internal/rollout"
	"cx/internal/testing/recalltest"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testArchive is a ledger under a new CX_HOME, with the projects of that
// home: what per-prompt recall reads.
type testArchive struct {
	db       *ledger.DB
	projects *recall.Projects
}

func newTestArchive(t *testing.T) (*testArchive, string) {
	t.Helper()
	db, home := recalltest.Ledger(t)
	return &testArchive{db, recall.NewProjects(home)}, home
}

func (a *testArchive) Recall(ctx context.Context, r Request) ([]Item, error) {
	return Recall(ctx, a.db, a.projects, r)
}

func (a *testArchive) Search(ctx context.Context, q search.Query) ([]search.Hit, error) {
	return search.NewArchive(a.db, a.projects.Home()).Search(ctx, q)
}

// archive stores and indexes one generation, as the local sink does.
func archive(t *testing.T, a *testArchive, sid string, gen int, cwd string, turns []rollout.Turn) {
	t.Helper()
	recalltest.Archive(t, a.db, a.projects, sid, gen, cwd, turns)
}

var exit = recalltest.Exit

// Per-prompt recall with a remote: the remote's items merged with the
// archive's (best of each in turn); a remote that fails or is late leaves
// the archive's items and says so, within its wait; none for a trivial
// prompt (the remote is not even asked).
func TestRecallWithRemote(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "s1", 1, proj, []rollout.Turn{
		{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the quokkaberry deploy fail?", Assistant: []string{"the zebrafinch cache is stale"}},
	})
	asked := 0
	memory := Item{Source: "openviking", Session: "viking://user/u/memories/deploy.md", Score: 0.8, Text: "[OpenViking memory viking://user/u/memories/deploy.md]\nclear the zebrafinch cache before a quokkaberry deploy"}
	remote := func(ctx context.Context, q string, n int) ([]Item, error) { asked++; return []Item{memory}, nil }
	items, err := a.Recall(ctx, Request{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: remote})
	if err != nil || len(items) != 2 || items[0].Source != "local" || items[1] != memory {
		t.Fatalf("merged: %+v, %v", items, err)
	}
	failing := func(ctx context.Context, q string, n int) ([]Item, error) { return nil, errors.New("503 unavailable") }
	items, err = a.Recall(ctx, Request{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: failing})
	if !errors.Is(err, ErrRemote) || len(items) != 1 || items[0].Session != "s1" {
		t.Fatalf("failing remote: %+v, %v", items, err)
	}
	slow := func(ctx context.Context, q string, n int) ([]Item, error) { <-ctx.Done(); return nil, ctx.Err() }
	start := time.Now()
	items, err = a.Recall(ctx, Request{Prompt: "how do I fix the quokkaberry deploy?", Project: proj, Remote: slow, RemoteWait: 200 * time.Millisecond})
	if !errors.Is(err, ErrRemote) || len(items) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("slow remote: %+v, %v after %v", items, err, time.Since(start))
	}
	asked = 0
	if items, _ := a.Recall(ctx, Request{Prompt: "thanks!", Project: proj, Remote: remote}); len(items) != 0 || asked != 0 {
		t.Fatalf("trivial prompt: %+v, remote asked %d times", items, asked)
	}
}

// A ledger a writer has yet to migrate (schema 13, before turns had their
// length) is refused by per-prompt recall with one clear error; once
// migrated, recall reads it, the turns indexed before ranked by lengths read
// from their text.
func TestPromptReadWaitsForTheUpgrade(t *testing.T) {
	a, home := newTestArchive(t)
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
	items, err := Recall(ctx, db, recall.NewProjects(home), Request{Prompt: "how do I fix the quokkaberry deploy?", Project: proj})
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

// codingProject archives four sessions of one repository as a model
// writes them: each runs its tests, so "run", "test" and "fix" are in
// every session, and each has a subject of its own.
func codingProject(t *testing.T, a *testArchive, proj string) {
	t.Helper()
	subjects := []struct{ sid, ask, reply, cmd string }{
		{"inv", "migrate the invoice tables to the new ledger schema", "moved the invoice rows; ran the tests, they pass", "go test ./invoice/..."},
		{"csv", "add a CSV export of the monthly report", "the export writes one CSV row per report line, a column per field; the tests pass", "go test ./export/..."},
		{"login", "fix the login redirect loop after the session expires", "the redirect now clears the expired session; fixed the failing test", "go test ./auth/..."},
		{"slow", "the yearly report is slow, profile it", "the report query lacked an index on created_at; the tests pass", "go test ./report/..."},
	}
	for _, s := range subjects {
		archive(t, a, s.sid, 1, proj, []rollout.Turn{
			{Key: s.sid + "1", Time: "2026-01-02T10:00:00Z", User: s.ask, Assistant: []string{s.reply},
				Tools: []rollout.ToolCall{{Name: "shell", Command: s.cmd, ExitCode: exit(0)}}},
			{Key: s.sid + "2", Time: "2026-01-02T10:10:00Z", User: "run the tests again and fix what fails", Assistant: []string{"ran the tests; all pass"},
				Tools: []rollout.ToolCall{{Name: "shell", Command: s.cmd, ExitCode: exit(0)}}},
		})
	}
}

// A prompt made of words every session of the project uses recalls
// nothing, however many turns hold them; one that names a subject
// recalls its turn.
func TestOrdinaryPromptsRecallNothing(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	codingProject(t, a, proj)
	for _, p := range []string{"run the tests", "the tests fail again, can you fix them", "fix the failing test", "run tests"} {
		items, err := a.Recall(ctx, Request{Prompt: p, Project: proj})
		if err != nil || len(items) != 0 {
			t.Errorf("%q recalled %d items (%v): %+v", p, len(items), err, items)
		}
	}
	items, err := a.Recall(ctx, Request{Prompt: "make the CSV export include the tax column", Project: proj})
	if err != nil || len(items) == 0 || items[0].Session != "csv" || items[0].Turn != 1 {
		t.Fatalf("a specific prompt: %+v, %v", items, err)
	}
}

// A conversation's answer is often the turn next to the one that holds
// the question's words: per-prompt recall weighs a word the turn next to
// it holds at half, so the answer is recalled with its question.
func TestRecallWeighsTheTurnNextToIt(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "c1", 1, proj, []rollout.Turn{
		{Key: "t1", User: "Nate, how are the turtles doing? what do they eat these days?"},
		{Key: "t2", User: "a mix of vegetables, fruit and insects, a varied diet"},
		{Key: "t3", User: "I watched a film about pirates"},
	})
	for i := 0; i < 6; i++ { // other sessions, so the words are not ordinary
		archive(t, a, fmt.Sprintf("o%d", i), 1, proj, []rollout.Turn{{Key: fmt.Sprint("o", i), User: fmt.Sprintf("weekend number %d was quiet", i)}})
	}
	// Turn 2 holds one word of three ("diet"), under the floor alone; the
	// turn before it holds the two others.
	items, err := a.Recall(ctx, Request{Prompt: "what diet do Nate's turtles have?", Project: proj})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s/%d %.2f", it.Session, it.Turn, it.Score))
	}
	if len(items) < 2 || items[1].Turn != 2 || items[1].Score < DefaultMinScore {
		t.Fatalf("recalled %v, want c1/1 then c1/2 above the floor on its own", got)
	}
}

// The turn before a recalled turn, when it holds a word of the prompt
// itself, is given with it, right before it (its passage: the answer is
// often the turn before the one that holds the question's words, as search
// takes it), however low its own rank; one that holds no word of the prompt
// is not.
func TestRecallGivesTheTurnBefore(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "c1", 1, proj, []rollout.Turn{
		{Key: "t1", User: "Biscuit came to us from the Riverside shelter, the volunteers there walked her every single day for a month"},
		{Key: "t2", User: "the puppy from the shelter is doing great, the puppy sleeps all day"},
	})
	archive(t, a, "c2", 1, proj, []rollout.Turn{
		{Key: "t1", User: "we had a long lunch by the river"},
		{Key: "t2", User: "the puppy from the shelter is doing great, the puppy sleeps all day"},
	})
	for i := 0; i < 12; i++ { // turns that rank above c1's first
		archive(t, a, fmt.Sprintf("o%02d", i), 1, proj, []rollout.Turn{{Key: "o", User: fmt.Sprintf("the puppy from the shelter chewed shoe number %d", i)}})
	}
	for i := 0; i < 16; i++ { // other sessions, so the words are not ordinary
		archive(t, a, fmt.Sprintf("w%02d", i), 1, proj, []rollout.Turn{{Key: "w", User: fmt.Sprintf("weekend number %d was quiet", i)}})
	}
	items, err := a.Recall(ctx, Request{Prompt: "how is the puppy from the shelter doing?", Project: proj})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, fmt.Sprintf("%s/%d", it.Session, it.Turn))
	}
	at := slices.Index(got, "c1/2")
	if at < 1 || got[at-1] != "c1/1" || slices.Contains(got, "c2/1") {
		t.Fatalf("recalled %v, want c1/1 right before c1/2, and no c2/1", got)
	}
}

// TestWindowFollowsTheIndex: recall writes its window file on first use,
// reads it after, and reads the window again when the index moved on (a
// session archived since, one forgotten) or the file is damaged — each
// time giving what the index holds.
func TestWindowFollowsTheIndex(t *testing.T) {
	a, home := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "s1", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the walrus migration fail?", Assistant: []string{"the walrus table lacks an index"}}})
	ask := func(prompt string) []string {
		t.Helper()
		items, err := a.Recall(ctx, Request{Prompt: prompt, Project: proj})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Session)
		}
		return got
	}
	path := recall.WindowPath(home, a.projects.Of(proj))
	if got := ask("walrus migration failing"); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("first: %v", got)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no window file after the first prompt: %v", err)
	}
	archive(t, a, "s2", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-03T10:00:00Z", User: "the narwhal deploy broke", Assistant: []string{"rolled the narwhal deploy back"}}})
	if got := ask("narwhal deploy"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("after a session was archived: %v", got)
	}
	if now, _ := os.ReadFile(path); string(now) == string(first) {
		t.Error("the window file was not written again")
	}
	// A session archived since: the sweep's refresh reads the window again.
	archive(t, a, "s3", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-04T10:00:00Z", User: "the okapi cache", Assistant: []string{"okapi cache cleared"}}})
	before, _ := os.ReadFile(path)
	if err := recall.RefreshWindows(ctx, a.db, home); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(before) == string(after) || !strings.Contains(string(after), "okapi") {
		t.Error("RefreshWindows left a stale window")
	}
	written, _ := os.Stat(path)
	if err := recall.RefreshWindows(ctx, a.db, home); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(path); !os.SameFile(written, again) {
		t.Error("RefreshWindows wrote a current window again") // a write replaces the file (fsutil.WriteAtomic)
	}
	os.WriteFile(path, []byte("cxwin01\ngarbage"), 0o600)
	if got := ask("narwhal deploy"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("with a damaged file: %v", got)
	}
	if err := a.db.Tx(ctx, func(tx *ledger.Tx) error { _, err := tx.Forget(ctx, "s2"); return err }); err != nil {
		t.Fatal(err)
	}
	if got := ask("narwhal deploy"); got != nil {
		t.Errorf("after forget: %v", got)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "narwhal") {
		t.Error("the window file still holds the forgotten session")
	}
	if err := recall.DropWindows(home); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(home, "recall", "*")); len(left) != 0 {
		t.Errorf("DropWindows left %v", left)
	}
}

// A date in a question names when, not words: search and per-prompt recall
// both put the turn of that day first, among turns that say the same.
func TestDateInQuestionFindsThatDay(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	for i, day := range []string{"2026-01-05", "2026-03-09", "2026-05-11"} {
		archive(t, a, fmt.Sprintf("d%d", i+1), 1, proj, []rollout.Turn{
			{Key: "k", Time: day + "T10:00:00Z", User: "we repainted the garden fence", Assistant: []string{"the fence looks fresh now"}}})
	}
	local := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC).Local().Format("January 2, 2006")
	q := "what did we repaint on " + local + "?"
	hits, err := a.Search(ctx, search.Query{Text: q, Project: proj, Limit: 3})
	if err != nil || len(hits) == 0 || hits[0].Session != "d2" {
		t.Fatalf("search %q: %+v, %v (want d2 first)", q, hits, err)
	}
	items, err := a.Recall(ctx, Request{Prompt: q, Project: proj})
	if err != nil || len(items) == 0 || items[0].Session != "d2" {
		t.Fatalf("recall %q: %+v, %v (want d2 first)", q, items, err)
	}
	// Without the date the newest is first, as before.
	if hits, _ := a.Search(ctx, search.Query{Text: "what did we repaint?", Project: proj, Limit: 3}); len(hits) == 0 || hits[0].Session != "d3" {
		t.Errorf("search without a date: %+v (want d3 first)", hits)
	}
	if !strings.Contains(items[0].Text, "2026-03-09") {
		t.Errorf("the item does not say its day: %q", items[0].Text)
	}
}

// The dense stage: a word near one of the prompt's in meaning (the turn
// says "kids", the prompt "children") counts for a share of it, so a turn
// that says the same thing in other words is recalled; without it
// (`[recall] dense = false`) the same turn is under the floor.
func TestNearWordsCountForAShare(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "museum", 1, proj, []rollout.Turn{
		{Key: "m1", User: "took the kids to the museum, they adored the dinosaur exhibit"},
		{Key: "m2", User: "we drove home through the rain"},
	})
	for i := 0; i < 6; i++ { // other sessions, so the words are not ordinary
		archive(t, a, fmt.Sprintf("o%d", i), 1, proj, []rollout.Turn{{Key: fmt.Sprint("o", i), User: fmt.Sprintf("cooked pasta on evening number %d", i)}})
	}
	ask := "what did the children think of the dinosaur show at the gallery?"
	for _, near := range []bool{false, true} {
		items, err := a.Recall(ctx, Request{Prompt: ask, Project: proj, Near: near})
		if err != nil {
			t.Fatal(err)
		}
		got := len(items) > 0 && items[0].Session == "museum" && items[0].Turn == 1
		if got != near {
			t.Errorf("near words weighed %v: recalled %+v; want the museum turn %v", near, items, near)
		}
	}
}

// A likeness names no topic: in a project whose every session runs its
// tests, a prompt of those ordinary words and a word only near one of a
// session's ("sign in", "annual figures") recalls nothing, though the
// ordinary words and the likeness together would pass the floor.
func TestNearWordsNameNoTopic(t *testing.T) {
	a, _ := newTestArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	codingProject(t, a, proj)
	for _, p := range []string{"run the tests for the sign in", "the tests fail again on the annual figures", "run the tests, then the weekly summary"} {
		items, err := a.Recall(ctx, Request{Prompt: p, Project: proj, Near: true})
		if err != nil || len(items) != 0 {
			t.Errorf("%q recalled %d items (%v): %+v", p, len(items), err, items)
		}
	}
}
