package recall

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/ledger"
)

// BenchmarkLoadWindow loads a full window of coding-shaped turns (1,000
// turns of identifiers and words, 360 words each: a 1.4 MB file), what
// per-prompt recall does on every prompt before it ranks.
func BenchmarkLoadWindow(b *testing.B) {
	seed := uint32(7)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	common := strings.Fields("test parser the fix build error func return value config handler request session file write read")
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			if rnd(3) == 0 {
				ws[i] = fmt.Sprintf("ident%d_%d", rnd(4000), rnd(9))
			} else {
				ws[i] = fmt.Sprint(common[rnd(len(common))], rnd(300))
			}
		}
		return strings.Join(ws, " ")
	}
	var turns []ledger.WindowTurn
	for i := range WindowTurns {
		turns = append(turns, ledger.WindowTurn{
			RecallHit: ledger.RecallHit{ID: int64(i + 1), SessionID: fmt.Sprint("s", i/20), Generation: 1, Turn: i%20 + 1, At: time.Unix(int64(i), 0)},
			Text:      ledger.RecallText{Prompt: text(40), Reply: text(250), Commands: text(60), Files: text(10)}})
	}
	w, err := WindowOf(ledger.WindowStamp{Last: 1}, turns)
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	data := encodeWindow(w.stamp, w.entries())
	path := WindowPath(home, "p")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(data))/1024, "KB-file")
	b.ResetTimer()
	for range b.N {
		if w := LoadWindow(home, "p"); w == nil || len(w.Holding("parser7")) == 0 {
			b.Fatal("window not loaded")
		}
	}
}
