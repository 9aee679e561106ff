package search

import (
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/rollout"
)

// TestSnippetsAreFTS5s makes search's snippets in Go and with FTS5's
// snippet() for the same hits and wants them equal: turns made of the
// README's paragraphs (long and short, several sentences, punctuation,
// code), asked plain-word questions drawn from the same text.
func TestSnippetsAreFTS5s(t *testing.T) {
	a, _ := testArchive(t)
	ctx := context.Background()
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var paras []string
	for _, p := range strings.Split(string(readme), "\n\n") {
		if p = strings.TrimSpace(p); len(p) > 20 {
			paras = append(paras, p)
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	proj := t.TempDir()
	var turns []rollout.Turn
	for i := 0; i < 300; i++ {
		turns = append(turns, rollout.Turn{Key: string(rune('a'+i%26)) + strings.Repeat("x", i/26), Time: "2026-01-02T10:00:00Z",
			User: paras[rnd.IntN(len(paras))], Assistant: []string{paras[rnd.IntN(len(paras))]},
			Tools: []rollout.ToolCall{{Name: "shell", Command: strings.Fields(paras[rnd.IntN(len(paras))])[0] + " --flag"}}})
	}
	archive(t, a, "s1", 1, proj, turns)
	vocab := strings.Fields(string(readme)) // as typed: "parser_test.go" is a phrase of three terms
	compared := 0
	for q := 0; q < 150; q++ {
		var ws []string
		for range 1 + rnd.IntN(4) {
			ws = append(ws, vocab[rnd.IntN(len(vocab))])
		}
		pq, err := recall.ParseQuestion(strings.Join(ws, " "))
		if err != nil || !pq.Natural {
			continue
		}
		fts, err := a.db.Search(ctx, ledger.RecallQuery{Match: pq.Expr, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(fts))
		for i, h := range fts {
			ids[i] = h.ID
		}
		texts, err := a.db.RecallTexts(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		phrases := pq.Phrases()
		for _, h := range fts {
			tx := texts[h.ID]
			if got := snippet([]string{tx.Prompt, tx.Reply, tx.Commands, tx.Files}, phrases); got != h.Snippet {
				t.Errorf("query %s, turn %d:\n go:   %q\n fts5: %q", pq.Expr, h.Turn, got, h.Snippet)
			}
			compared++
		}
	}
	if compared < 300 {
		t.Fatalf("only %d snippets compared", compared)
	}
	t.Logf("%d snippets compared", compared)
}
