package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkCheckpointCommand is `cx ctl checkpoint --json` on a ~100 MB
// and a ~1 GB real-shaped rollout, as a process on one core (GOMAXPROCS=1)
// — the reduction import, the sweeper's catch-up and resume context share
// — and, with CX_BENCH_BASELINE_CX (scripts/bench.sh BASE=<rev>, e.g.
// a4d09e3), the same through that cx, interleaved. It reports throughput
// (MB/s, median), peak RSS (MiB) and cx over the baseline. Targets (issue
// 25): ≥ 1.0× the baseline and ≥ 200 MB/s at 100 MB; RSS ≤ 64 MiB at both.
func BenchmarkCheckpointCommand(b *testing.B) {
	bins := benchBins(b)
	dir := b.TempDir()
	sizes := []struct {
		name   string
		bytes  int64
		rounds int
	}{{"100MB", 100 << 20, max(b.N, 3)}, {"1GB", 1 << 30, 1}}
	for _, sz := range sizes {
		path := filepath.Join(dir, sz.name+".jsonl")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		codextest.WriteBigRollout(b, f, sz.bytes)
		f.Close()
		fi, _ := os.Stat(path)
		times := map[string][]time.Duration{}
		for r := 0; r < sz.rounds; r++ {
			for _, bin := range bins {
				cmd := exec.Command(bin.path, "ctl", "checkpoint", "--json", path)
				cmd.Env = append(bin.env, "GOMAXPROCS=1")
				start := time.Now()
				if out, err := cmd.Output(); err != nil || !bytes.Contains(out, []byte(`"turns"`)) {
					b.Fatalf("%s checkpoint %s: %v", bin.name, sz.name, err)
				}
				times[bin.name] = append(times[bin.name], time.Since(start))
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					b.ReportMetric(float64(maxrssBytes(ru))/(1<<20), bin.name+"-"+sz.name+"-peak-RSS-MiB")
				}
			}
		}
		mbps := map[string]float64{}
		for _, bin := range bins {
			ds := times[bin.name]
			slices.Sort(ds)
			mbps[bin.name] = float64(fi.Size()) / 1e6 / ds[len(ds)/2].Seconds()
			b.ReportMetric(mbps[bin.name], bin.name+"-"+sz.name+"-MB/s")
		}
		if base, ok := mbps["base"]; ok {
			b.ReportMetric(mbps["cx"]/base, "cx/base-"+sz.name)
		}
		os.Remove(path)
	}
}

// maxrssBytes is a finished process's peak RSS: getrusage gives kilobytes
// on Linux, bytes on macOS.
func maxrssBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
