package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkRecallTermRowsSparse reads per-prompt recall's word lists for a
// project seldom used — 50 turns, then 40,000 of another project, then 20
// more of its own — as RecallTermRows does (its window's ranges) and, as
// the baseline in the same run, from the window's first row on (one range,
// what it did before: every other project's turns since). Run it with
// -benchtime 1x.
func BenchmarkRecallTermRowsSparse(b *testing.B) {
	db, err := Open(context.Background(), filepath.Join(b.TempDir(), FileName), Options{BusyTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	add := func(sid, project string, n int) {
		var docs []RecallDoc
		for i := range n {
			docs = append(docs, RecallDoc{SessionID: sid, Generation: 1, Turn: i + 1, Key: fmt.Sprint(i), At: time.Now(), Project: project,
				Prompt: fmt.Sprintf("fix the flaky test number %d in the parser", i), Reply: "done"})
		}
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.IndexGeneration(ctx, sid, 1, docs) }); err != nil {
			b.Fatal(err)
		}
	}
	add("seldom-1", "seldom", 50)
	for i := range 20 {
		add(fmt.Sprintf("busy-%d", i), "busy", 2000)
	}
	add("seldom-2", "seldom", 20)
	window, err := db.RecallWindow(ctx, "seldom", "", 1000)
	if err != nil {
		b.Fatal(err)
	}
	matches := []string{`"fix"`, `"flaky"`, `"parser"`}
	times := map[string][]time.Duration{}
	b.ResetTimer()
	for range 20 {
		for _, n := range []int{maxWindowRanges, 1} {
			ranges := windowRanges(window, n)
			start := time.Now()
			if _, err := db.recallTermRowsIn(ctx, matches, window, ranges); err != nil {
				b.Fatal(err)
			}
			times[fmt.Sprint(n)] = append(times[fmt.Sprint(n)], time.Since(start))
		}
	}
	b.StopTimer()
	now, before := codextest.Ms(times[fmt.Sprint(maxWindowRanges)], 50), codextest.Ms(times["1"], 50)
	b.ReportMetric(now, "ranges-ms")
	b.ReportMetric(before, "from-first-row-ms")
	b.Logf("word lists of a seldom-used project's window (70 turns amid 40,000 of another), median of 20: in its ranges %.2f ms; from its first row on %.2f ms (%.0f×)", now, before, before/now)
}
