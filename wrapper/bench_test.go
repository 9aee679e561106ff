package wrapper

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkTapRelayLatency: the round trip of one JSON-RPC-sized frame to a
// child that echoes it, straight through pipes and through the tapped
// relay, in the same run; it reports both 99th percentiles and the latency
// the relay adds per frame.
func BenchmarkTapRelayLatency(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":42,"method":"turn/start","params":{"threadId":"01a20119-755a-7ec3-b3a7-6d6b815697b3","input":[{"type":"text","text":"hello"}]}}` + "\n")
	measure := func(cmd *exec.Cmd) []time.Duration {
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { in.Close(); _ = cmd.Wait() }()
		r := bufio.NewReader(out)
		var ds []time.Duration
		for i := 0; i < max(b.N, 2000); i++ {
			start := time.Now()
			if _, err := in.Write(frame); err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		return ds
	}
	dir := b.TempDir()
	direct := exec.Command(os.Args[0], "cat")
	direct.Env = append(os.Environ(), "WRAPPER_TEST_ROLE=child")
	tapped := exec.Command(os.Args[0])
	tapped.Env = append(os.Environ(), "WRAPPER_TEST_ROLE=supervisor", "SUP_MODE=pipe", "SUP_CHILD=cat",
		"SUP_TAP_IN="+dir+"/in", "SUP_TAP_OUT="+dir+"/out", "SUP_RESULT="+dir+"/r.json")
	d, t := measure(direct), measure(tapped)
	p99 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)*99/100].Microseconds()) / 1000
	}
	b.ReportMetric(p99(d), "direct-p99-ms")
	b.ReportMetric(p99(t), "relayed-p99-ms")
	b.ReportMetric(p99(t)-p99(d), "added-p99-ms")
}
