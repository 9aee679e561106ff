package main

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkMCPInitialize times `cx mcp` as Codex meets it at every session
// start: from the process's start to its answer to initialize (target:
// under 50 ms). Beside it, in the same alternated rounds, the start-to-exit
// time of `cx ctl help` (cx's own process start) and of /bin/true (the
// floor of starting any process).
func BenchmarkMCPInitialize(b *testing.B) {
	cx := codextest.CX(b)
	home := b.TempDir()
	env := []string{"HOME=" + home, "CX_HOME=" + home + "/.cx", "PATH=/usr/bin:/bin"}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"0.169.0"}}}` + "\n"
	mcpRound := func() time.Duration {
		cmd := exec.Command(cx, "mcp")
		cmd.Env = env
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(in, initialize)
		line, err := bufio.NewReader(out).ReadString('\n')
		d := time.Since(start)
		in.Close()
		cmd.Wait()
		if err != nil || !strings.Contains(line, `"serverInfo"`) {
			b.Fatalf("initialize: %v %q", err, line)
		}
		return d
	}
	exitRound := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	times := map[string][]time.Duration{}
	rounds := max(b.N, 100)
	b.ResetTimer()
	for i := 0; i < rounds; i++ {
		times["mcp"] = append(times["mcp"], mcpRound())
		times["help"] = append(times["help"], exitRound(cx, "ctl", "help"))
		times["true"] = append(times["true"], exitRound("/bin/true"))
	}
	b.StopTimer()
	for _, k := range []string{"mcp", "help", "true"} {
		b.ReportMetric(codextest.Ms(times[k], 50), k+"-p50-ms")
	}
	b.Logf("%d alternated rounds: cx mcp start→initialize answer p50 %.2f ms p99 %.2f ms (target < 50 ms); cx ctl help start→exit p50 %.2f ms; /bin/true p50 %.2f ms",
		rounds, codextest.Ms(times["mcp"], 50), codextest.Ms(times["mcp"], 99), codextest.Ms(times["help"], 50), codextest.Ms(times["true"], 50))
}
