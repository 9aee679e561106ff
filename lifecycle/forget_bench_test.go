package lifecycle_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkForget is what forgetting that forgets costs: a ledger holding
// a real-shaped session of ~100 MB (CX_BENCH_SIZES' largest) and one of
// ~1 MB, both imported with `cx ctl import`; then `cx ctl forget` of the
// small one (in the big ledger) and of the big one, each timed as a
// process. With CX_BENCH_BASELINE_CX=<cx before zeroed deletes> the same
// through it ("base"), and the baseline's ledger forgotten by this cx
// ("legacy": its first forget vacuums what the old cx left in free
// space). It reports the times, and the copies of the small session's
// rare word left in the ledger's files after its forget (cx: must be 0).
func BenchmarkForget(b *testing.B) {
	sizes := benchSizes()
	bigMB := sizes[len(sizes)-1]
	const rare = "quasarwombat"
	type variant struct{ name, importer, forgetter string }
	cx := newEnv(b).cx
	variants := []variant{{"cx", cx, cx}}
	if base := os.Getenv("CX_BENCH_BASELINE_CX"); base != "" {
		variants = append(variants, variant{"base", base, base}, variant{"legacy", base, cx})
	}
	for _, v := range variants {
		e := newEnv(b)
		dir := filepath.Join(e.codexHome, "sessions", "2026", "11", "22")
		os.MkdirAll(dir, 0o700)
		bigPath := filepath.Join(dir, "rollout-2026-11-22T01-32-39-01a200e2-466f-78c1-85cf-e11cb0ec651a.jsonl")
		bigID, _, _ := buildHistory(b, bigPath, bigMB<<20)
		tmp := filepath.Join(b.TempDir(), "small.jsonl")
		buildHistory(b, tmp, 1<<20)
		const smallID = "01a200e2-466f-78c1-85cf-e11cb0ec6600"
		data, _ := os.ReadFile(tmp)
		data = bytes.ReplaceAll(data, []byte(bigID), []byte(smallID))
		data = bytes.ReplaceAll(data, []byte("parser_test.go"), []byte(rare+"_test.go"))
		smallPath := filepath.Join(dir, "rollout-2026-11-22T01-32-40-"+smallID+".jsonl")
		os.WriteFile(smallPath, data, 0o600)
		old := time.Now().Add(-48 * time.Hour)
		for _, p := range []string{bigPath, smallPath} {
			os.Chtimes(p, old, old)
		}
		timed := func(what, bin string, args ...string) time.Duration {
			cmd := exec.Command(bin, args...)
			cmd.Env = e.environ()
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %s: %v\n%s", v.name, what, err, out)
			}
			return time.Since(start)
		}
		imp := timed("import", v.importer, "ctl", "import")
		db := filepath.Join(e.cxHome, "cx.db")
		fi, _ := os.Stat(db)
		b.ReportMetric(imp.Seconds(), v.name+"-import-s")
		b.ReportMetric(float64(fi.Size())/(1<<20), v.name+"-ledger-MiB")
		if codextest.CountIn(rare, db, db+"-wal", db+"-shm") == 0 {
			b.Fatalf("%s: the small session's word is not in the ledger before its forget", v.name)
		}
		small := timed("forget small", v.forgetter, "ctl", "forget", "--yes", smallID)
		b.ReportMetric(float64(small.Milliseconds()), v.name+"-forget-1MB-in-big-ledger-ms")
		b.ReportMetric(float64(codextest.CountIn(rare, db, db+"-wal", db+"-shm")), v.name+"-copies-left")
		big := timed("forget big", v.forgetter, "ctl", "forget", "--yes", bigID)
		b.ReportMetric(float64(big.Milliseconds()), v.name+"-forget-big-ms")
	}
}
