package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cx/internal/rollout"
	"cx/internal/testing/codextest"
)

// bigRollout builds a real-shaped rollout of at least size bytes
// (codextest.WriteBigRollout) in memory.
func bigRollout(tb testing.TB, size int) []byte {
	tb.Helper()
	var b bytes.Buffer
	b.Grow(size + 1<<20)
	codextest.WriteBigRollout(tb, &b, int64(size))
	return b.Bytes()
}

// BenchmarkReadReduce: reader + turn assembly + checkpoint reduction over a
// ≥100 MB rollout, in MB/s (run with -cpu 1 for one core).
func BenchmarkReadReduce(b *testing.B) {
	data := bigRollout(b, 100<<20)
	p := filepath.Join(b.TempDir(), "big.jsonl")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := rollout.CaptureFile(p, rollout.Cursor{}, nil, rollout.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cp := fromCapture(c, DefaultCaps)
		if cp.Stats.Turns == 0 {
			b.Fatal("no turns")
		}
	}
}

// BenchmarkStopCapture: the cost of capturing one new turn at the end of a
// 1 MB and of a 100 MB rollout (what a Stop hook does), and their ratio.
func BenchmarkStopCapture(b *testing.B) {
	turn := bigRollout(b, 1)[0:0]
	src, _ := os.ReadFile("../../testdata/rollouts/0.169.0/killed.jsonl")
	lines := bytes.SplitAfter(src, []byte{'\n'})
	for _, l := range lines[1:] {
		turn = append(turn, bytes.ReplaceAll(l, []byte("01a200e2-"), []byte("ffffffff-"))...)
	}
	measure := func(size int) time.Duration {
		data := bigRollout(b, size)
		p := filepath.Join(b.TempDir(), fmt.Sprintf("r%d.jsonl", size))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			b.Fatal(err)
		}
		c, err := rollout.CaptureFile(p, rollout.Cursor{}, nil, rollout.Options{})
		if err != nil {
			b.Fatal(err)
		}
		f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o600)
		f.Write(turn)
		f.Close()
		runs := max(b.N, 200)
		start := time.Now()
		for i := 0; i < runs; i++ {
			c2, err := rollout.CaptureFile(p, c.Cursor, c.Meta, rollout.Options{})
			if err != nil || len(c2.Turns) != 1 {
				b.Fatalf("capture: %v, %d turns", err, len(c2.Turns))
			}
		}
		return time.Since(start) / time.Duration(runs)
	}
	small, large := measure(1<<20), measure(100<<20)
	b.ReportMetric(float64(small.Microseconds()), "µs/turn-at-1MB")
	b.ReportMetric(float64(large.Microseconds()), "µs/turn-at-100MB")
	b.ReportMetric(float64(large)/float64(small), "ratio")
}
