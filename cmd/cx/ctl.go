package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// ctlCommand is one `cx ctl` subcommand.
type ctlCommand struct {
	summary string
	run     func(a *app, ctx context.Context, args []string) int
}

// ctlCommands is the dispatch table later commands join. `ctl` is not a
// Codex subcommand, so `alias codex=cx` never hides one of Codex's.
var ctlCommands = map[string]ctlCommand{
	"version":    {"print cx's version (and the Codex it would run)", (*app).ctlVersion},
	"hook":       {"the hook handler Codex runs (JSON on stdin, JSON on stdout)", (*app).ctlHook},
	"status":     {"runs, live sessions, pending and parked jobs [--json]", (*app).ctlStatus},
	"sessions":   {"every session cx knows [--json]", (*app).ctlSessions},
	"show":       {"one session: generations, jobs, archive, events [--json]", (*app).ctlShow},
	"commit":     {"end a session's live generation now and commit it", (*app).ctlCommit},
	"sweep":      {"end orphaned and idle sessions, work the outbox", (*app).ctlSweep},
	"retry":      {"put parked jobs back in the outbox (job ids or --all)", (*app).ctlRetry},
	"checkpoint": {"the deterministic checkpoint of a rollout (--json, or its view)", (*app).ctlCheckpoint},
	"install":    {"put cx's hooks into Codex (hooks.json + trust) [--codex-home DIR] [--dry-run]", (*app).ctlInstall},
	"uninstall":  {"take cx's hooks out of Codex [--codex-home DIR]", (*app).ctlUninstall},
	"context":    {"print the context a new session here would be given [--cwd DIR]", (*app).ctlContext},
	"doctor":     {"check Codex, cx's hooks (installed, trusted, firing), the ledger [--json]", (*app).ctlDoctor},
}

const usageExit = 2

func (a *app) ctl(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		a.ctlUsage()
		if len(args) == 0 {
			return usageExit
		}
		return 0
	}
	c, ok := ctlCommands[args[0]]
	if !ok {
		a.errorf("unknown command %q (see `cx ctl help`)", "ctl "+args[0])
		return usageExit
	}
	return c.run(a, ctx, args[1:])
}

func (a *app) ctlUsage() {
	names := make([]string, 0, len(ctlCommands))
	for n := range ctlCommands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: cx [codex args…]     run Codex under supervision\n")
	b.WriteString("       cx ctl <command> …    cx's own commands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, ctlCommands[n].summary)
	}
	fmt.Fprint(a.stdout, b.String())
}

// version is cx's version: set at link time (-X main.version=…), else the
// module version recorded by `go install`, else "devel".
var version = ""

func cxVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func (a *app) ctlVersion(ctx context.Context, args []string) int {
	var asJSON bool
	if _, code, ok := a.args(ctlArgs{name: "version", define: jsonFlag(&asJSON)}, args); !ok {
		return code
	}
	out := struct {
		Version      string `json:"version"`
		Codex        string `json:"codex,omitempty"`
		CodexVersion string `json:"codex_version,omitempty"`
		CodexError   string `json:"codex_error,omitempty"`
	}{Version: cxVersion()}
	if cfg, err := a.loadConfig(); err != nil {
		out.CodexError = err.Error()
	} else if bin, caps, err := a.findCodex(ctx, cfg); err != nil {
		out.CodexError = err.Error()
	} else {
		out.Codex, out.CodexVersion = bin.Path, caps.Version
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
		return 0
	}
	fmt.Fprintf(a.stdout, "cx %s\n", out.Version)
	if out.CodexError != "" {
		fmt.Fprintf(a.stdout, "codex: %s\n", out.CodexError)
	} else {
		fmt.Fprintf(a.stdout, "codex %s (%s)\n", out.CodexVersion, out.Codex)
	}
	return 0
}
