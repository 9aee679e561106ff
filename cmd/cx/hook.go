package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"cx/hookserver"
	"cx/internal/buildinfo"
	"cx/internal/cli"
	"cx/internal/hookwire"
	"cx/mcpserver"
)

// processStart is when this process began (package initialisation runs
// within a millisecond of exec): hook deadlines count from here, as Codex's
// timeout does.
var processStart = time.Now()

// ctlHook is the handler Codex runs for each hook event; the protocol is
// hookserver's (hookserver.Serve). A command line it cannot parse still
// gets a valid no-op answer.
func (a *app) ctlHook(ctx context.Context, args []string) error {
	event, help, argErr := hookserver.Args(args)
	if help != "" {
		fmt.Fprint(a.stdout, help)
		return nil
	}
	ppid, start := hookwire.FromClient(processStart)
	return exitStatus(hookserver.Serve(ctx, hookserver.HookCall{Event: event, ArgErr: argErr, Stdin: a.stdin, Stdout: a.stdout,
		Getenv: a.getenv, Start: start, PPID: ppid, Environ: os.Environ()}))
}

// ctlMCP is `cx mcp` (and `cx ctl mcp`): the MCP server Codex starts.
func (a *app) ctlMCP(ctx context.Context, args []string) error {
	if _, err := a.args(cli.Spec{Name: "mcp"}, args); err != nil {
		return err
	}
	cfg, err := a.loadConfigToRead()
	if err != nil {
		return err
	}
	return mcpserver.Run(ctx, mcpserver.Options{Home: cfg.Home, Cwd: cwd(), Version: buildinfo.Version(version)}, a.stdin, a.stdout)
}
