package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"cx/internal/buildinfo"
	"cx/internal/cli"
	"cx/internal/codex"
)

// ctlCommand is one `cx ctl` subcommand.
type ctlCommand struct {
	summary string
	run     func(a *app, ctx context.Context, args []string) error
}

// ctlCommands is the dispatch table later commands join. `ctl` is not a
// Codex subcommand, so `alias codex=cx` never hides one of Codex's.
var ctlCommands = map[string]ctlCommand{
	"version":    {"print cx's version and the Codex it would run", (*app).ctlVersion},
	"hook":       {"the hook handler Codex runs (JSON on stdin, JSON on stdout)", (*app).ctlHook},
	"status":     {"runs, live sessions, pending and parked jobs", (*app).ctlStatus},
	"sessions":   {"every session cx knows", (*app).ctlSessions},
	"show":       {"one session: generations, jobs, archive; --turn N shows one turn whole", (*app).ctlShow},
	"commit":     {"end a session's live generation now and commit it", (*app).ctlCommit},
	"sweep":      {"end orphaned and idle sessions, work the outbox", (*app).ctlSweep},
	"retry":      {"put parked jobs back in the outbox, and make jobs in backoff due now", (*app).ctlRetry},
	"checkpoint": {"the deterministic checkpoint of a rollout, or its view", (*app).ctlCheckpoint},
	"install":    {"put cx's hooks into Codex (hooks.json and their trust) and register its MCP server", (*app).ctlInstall},
	"uninstall":  {"take cx's hooks and MCP server out of Codex", (*app).ctlUninstall},
	"context":    {"print the context a new session here would be given", (*app).ctlContext},
	"doctor":     {"check Codex, cx's hooks (installed, trusted, firing), the ledger, the sinks", (*app).ctlDoctor},
	"search":     {"search past sessions' prompts, replies, commands and files", (*app).ctlSearch},
	"recall":     {"what cx would add to the model's context for a prompt, with scores", (*app).ctlRecall},
	"import":     {"archive the sessions Codex already has, so search finds them", (*app).ctlImport},
	"forget":     {"remove a session's (or a project's) archive and search index", (*app).ctlForget},
	"mcp":        {"the MCP server Codex starts (as `cx mcp`, answered on a pipe only: typed in a terminal, `cx mcp` is Codex's own `codex mcp`): search, session and turn tools on stdio", (*app).ctlMCP},
}

const usageExit = 2

// exitStatus is a command's exit status as an error, in the style of
// mvdan.cc/sh's interp.ExitStatus: the command has already said what went
// wrong (or, 0, that it is done: --help).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a command line refused: said, and exit 2.
type usageError struct{ error }

// exit turns a command's error into its exit status, saying it (one line
// on stderr, "cx: …") unless the command has.
func (a *app) exit(err error) int {
	var st exitStatus
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &usage):
		a.errorf("%v", usage.error)
		return usageExit
	}
	a.errorf("%v", err)
	return 1
}

func (a *app) ctl(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.ctlUsage(a.stderr)
		return usageExit
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 && args[0] == "help" {
			// `cx ctl help search` is `cx ctl search --help`.
			if c, ok := ctlCommands[args[1]]; ok {
				return a.exit(c.run(a, ctx, []string{"--help"}))
			}
			a.errorf("unknown command %q (see `cx ctl help`)", "ctl "+args[1])
			return usageExit
		}
		a.ctlUsage(a.stdout)
		return 0
	}
	c, ok := ctlCommands[args[0]]
	if !ok {
		a.errorf("unknown command %q (see `cx ctl help`)", "ctl "+args[0])
		return usageExit
	}
	return a.exit(c.run(a, ctx, args[1:]))
}

func (a *app) ctlUsage(w io.Writer) {
	fmt.Fprint(w, "usage: cx [codex args…]     run Codex under supervision\n       cx ctl <command> …    cx's own commands:\n")
	for _, n := range slices.Sorted(maps.Keys(ctlCommands)) {
		fmt.Fprintf(w, "  %-10s %s\n", n, ctlCommands[n].summary)
	}
	fmt.Fprint(w, "`cx ctl <command> --help` shows a command's flags; --json prints one JSON document.\n")
}

func (a *app) ctlVersion(ctx context.Context, args []string) error {
	var asJSON bool
	if _, err := a.args(cli.Spec{Name: "version", Define: cli.JSONFlag(&asJSON)}, args); err != nil {
		return err
	}
	out := cli.VersionView{Version: buildinfo.Version(version)}
	if cfg, err := a.loadConfig(); err != nil {
		out.CodexError = err.Error()
	} else if bin, caps, err := codex.FindFor(ctx, cfg.Codex.Bin, cfg.Home, a.getenv); err != nil {
		out.CodexError = err.Error()
	} else {
		out.Codex, out.CodexVersion = bin.Path, caps.Version
	}
	a.render(asJSON, out, out.WriteText)
	return nil
}

// version is cx's version when set at link time (-X main.version=…).
var version = ""
