package prompt

import (
	"fmt"
	"testing"
	"time"

	"cx/internal/ledger"
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
		rank(w, terms, nil, "", DefaultMinScore)
	}
}
