package recall

import (
	"context"
	"fmt"
	"testing"

	"cx/internal/rollout"
)

// codingProject archives four sessions of one repository as a model
// writes them: each runs its tests, so "run", "test" and "fix" are in
// every session, and each has a subject of its own.
func codingProject(t *testing.T, a *Archive, proj string) {
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
	a, _ := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	codingProject(t, a, proj)
	for _, p := range []string{"run the tests", "the tests fail again, can you fix them", "fix the failing test", "run tests"} {
		items, err := a.Recall(ctx, PromptRequest{Prompt: p, Project: proj})
		if err != nil || len(items) != 0 {
			t.Errorf("%q recalled %d items (%v): %+v", p, len(items), err, items)
		}
	}
	items, err := a.Recall(ctx, PromptRequest{Prompt: "make the CSV export include the tax column", Project: proj})
	if err != nil || len(items) == 0 || items[0].Session != "csv" || items[0].Turn != 1 {
		t.Fatalf("a specific prompt: %+v, %v", items, err)
	}
}

// A conversation's answer is often the turn next to the one that holds
// the question's words: per-prompt recall weighs a word the turn next to
// it holds at half, so the answer is recalled with its question.
func TestRecallWeighsTheTurnNextToIt(t *testing.T) {
	a, _ := testArchive(t)
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
	items, err := a.Recall(ctx, PromptRequest{Prompt: "what diet do Nate's turtles have?", Project: proj})
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
	if _, err := readWindow(ctx, a.db, home, a.projects.Of(proj)); err != nil { // as the index's upkeep keeps it
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
