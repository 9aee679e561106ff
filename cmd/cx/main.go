// Command cx runs the OpenAI Codex CLI under supervision: `cx [codex args…]`
// runs Codex, `cx ctl …` runs cx's own commands. This is the only place that
// calls os.Exit. It parses flags, renders and wires; what cx does lives in
// the packages below it.
//
// Commands return errors; exit turns them into the exit status (an
// exitStatus is one the command has already explained).
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"cx/internal/tty"
	"cx/wrapper"
)

// app is what a command needs from the process: its streams and environment.
type app struct {
	stdin, stdout, stderr *os.File
	getenv                func(string) (string, bool)
	cfg                   *loadedConfig // once read
	// attributed is called once a run's Codex is recorded (nil: nothing).
	attributed func()
}

func main() {
	if wrapper.IsLeader() {
		// cx as the session leader of Codex's PTY (job control): nothing of
		// cx's own runs here.
		os.Exit(wrapper.LeaderMain(os.Args[1:]))
	}
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.LookupEnv}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// A run's cx (and an MCP server) mostly waits on Codex, woken by
		// I/O and timers: with one P the scheduler does not spin looking
		// for work between wake-ups (a run's wrapper CPU -20%,
		// TestBenchExecRuns). A run keeps every core until Codex is
		// recorded, which its first hooks wait for (with one P from the
		// start, 16 sessions under cx: hook p99 223 against 196 ms).
		// `cx ctl` (the hook host among them) keeps every core.
		if len(os.Args) == 2 && os.Args[1] == "mcp" {
			runtime.GOMAXPROCS(1)
		}
		a.attributed = func() { runtime.GOMAXPROCS(1) }
	}
	os.Exit(a.main(context.Background(), os.Args[1:]))
}

func (a *app) main(ctx context.Context, args []string) int {
	if len(args) > 0 && args[0] == "ctl" {
		return a.ctl(ctx, args[1:])
	}
	if len(args) == 1 && args[0] == "mcp" && !tty.IsTerminal(a.stdin.Fd()) {
		// What MCP clients start; `codex mcp …` from a terminal stays Codex's.
		return a.exit(a.ctlMCP(ctx, nil))
	}
	return a.runCodex(ctx, args)
}

func (a *app) errorf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "cx: "+format+"\n", args...)
}
