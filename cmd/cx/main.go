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
	"slices"

	"cx/internal/tty"
	"cx/supervisor"
	"cx/wrapper"
)

// app is what a command needs from the process: its streams and environment.
type app struct {
	stdin, stdout, stderr *os.File
	getenv                func(string) (string, bool)
	cfg                   *loadedConfig // once read
	oneP                  bool          // supervisor.Launch.OneP
	startsHost            bool          // supervisor.Launch.StartsHost
}

func main() {
	if wrapper.IsLeader() {
		// cx as the session leader of Codex's PTY (job control): nothing of
		// cx's own runs here.
		os.Exit(wrapper.LeaderMain(os.Args[1:]))
	}
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.LookupEnv, oneP: true, startsHost: true}
	if mcp := os.Args[1:]; slices.Equal(mcp, []string{"mcp"}) || slices.Equal(mcp, []string{"ctl", "mcp"}) {
		supervisor.OneP(os.LookupEnv)
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
