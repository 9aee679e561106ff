package prompt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"cx/internal/ledger"
	"cx/internal/nearwords"
	"cx/internal/recall"
)

// BenchmarkRankFullWindow ranks a prompt whose every word each of a full
// window's turns holds (the worst case: every turn is a candidate), 1,000
// turns of 50 sessions: per-prompt recall's own work on every prompt,
// beside the hook's process (15-20 ms).
func BenchmarkRankFullWindow(b *testing.B) {
	var turns []ledger.WindowTurn
	for i := 0; i < recall.WindowTurns; i++ {
		text := fmt.Sprintf("how did we fix the flaky test in parser_test.go, step %d of session %d", i, i%50)
		turns = append(turns, ledger.WindowTurn{
			RecallHit: ledger.RecallHit{ID: int64(i + 1), SessionID: fmt.Sprint("s", i/20), Generation: 1, Turn: i%20 + 1, At: time.Unix(int64(i), 0), Chars: len(text)},
			Text:      ledger.RecallText{Prompt: text, Reply: "fixed the flaky parser test"}})
	}
	w, err := recall.WindowOf(ledger.WindowStamp{Last: 1}, turns)
	if err != nil {
		b.Fatal(err)
	}
	q, _ := recall.ParseQuestion("how did we fix the flaky test in parser_test.go?")
	terms := q.Phrases()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rank(w, terms, nil, "", DefaultMinScore, nearwords.Of)
	}
}

// BenchmarkRankNear ranks a prompt of words with many neighbours over a
// full window of varied English (each turn 40 words of the nearwords
// table), with words near in meaning weighed and without: the dense
// stage's own cost on a prompt.
func BenchmarkRankNear(b *testing.B) {
	vocab := nearwords.Terms()
	var turns []ledger.WindowTurn
	seed := uint32(1)
	for i := 0; i < recall.WindowTurns; i++ {
		var ws []string
		for range 40 {
			seed = seed*1664525 + 1013904223
			ws = append(ws, vocab[int(seed>>8)%min(len(vocab), 20000)])
		}
		text := strings.Join(ws, " ")
		turns = append(turns, ledger.WindowTurn{
			RecallHit: ledger.RecallHit{ID: int64(i + 1), SessionID: fmt.Sprint("s", i/20), Generation: 1, Turn: i%20 + 1, At: time.Unix(int64(i), 0), Chars: len(text)},
			Text:      ledger.RecallText{Prompt: text}})
	}
	w, err := recall.WindowOf(ledger.WindowStamp{Last: 1}, turns)
	if err != nil {
		b.Fatal(err)
	}
	q, _ := recall.ParseQuestion("what did my kids think of the museum trip and the dinosaur exhibit last summer?")
	terms := q.Phrases()
	for _, c := range []struct {
		name string
		near func(string) []nearwords.Near
	}{{"off", nil}, {"near", nearwords.Of}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rank(w, terms, nil, "", DefaultMinScore, c.near)
			}
		})
	}
}
