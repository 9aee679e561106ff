package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"cx/hookcfg"
	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/health"
	"cx/lifecycle"
)

// installCommand is what install, uninstall and doctor share: cx's config,
// the installer for Codex's home (or --codex-home), and the Codex found.
type installCommand struct {
	cfg      config.Config
	in       *hookcfg.Installer
	bin      codex.Binary
	caps     codex.Caps
	codexErr error // no Codex: hooks can be written, not trusted
}

func (a *app) installer(ctx context.Context, cfg config.Config, codexHome string) (ic installCommand, err error) {
	ic.cfg = cfg
	ic.bin, ic.caps, ic.codexErr = a.findCodex(ctx, cfg)
	ic.in, err = hookcfg.New(codexHome, filepath.Join(cfg.Home, "install"), a.getenv, ic.bin, ic.caps, ic.codexErr)
	if err == nil {
		ic.in.CXHome = cfg.Home
	}
	return ic, err
}

// installerCommand parses --codex-home (and the command's own flags) and
// builds the installCommand; nil comes with the exit code.
func (a *app) installerCommand(ctx context.Context, name string, args []string, define func(*flag.FlagSet)) (*installCommand, int) {
	var codexHome string
	if _, code, ok := a.args(cli.Spec{Name: name, Define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		define(fs)
	}}, args); !ok {
		return nil, code
	}
	cfg, err := a.loadConfig()
	if err != nil {
		a.errorf("%v", err)
		return nil, 1
	}
	ic, err := a.installer(ctx, cfg, codexHome)
	if err != nil {
		a.errorf("%v", err)
		return nil, 1
	}
	return &ic, 0
}

// installJSON is what install and uninstall print with --json.
type installJSON struct {
	HooksPath string   `json:"hooks_path"`
	Changed   bool     `json:"changed"`
	DryRun    bool     `json:"dry_run,omitempty"`
	Diff      string   `json:"diff,omitempty"`
	Backup    string   `json:"backup,omitempty"`
	Trusted   []string `json:"trusted"`
	Codex     string   `json:"codex_version,omitempty"`
	MCP       string   `json:"mcp,omitempty"`    // cx's MCP server: registered, unchanged, removed, skipped
	Import    int      `json:"import,omitempty"` // sessions `cx ctl import` would archive
	Warnings  []string `json:"warnings"`
}

func (a *app) ctlInstall(ctx context.Context, args []string) int {
	var dryRun, asJSON, noMCP bool
	ic, code := a.installerCommand(ctx, "install", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&dryRun, "dry-run", false, "print the change to hooks.json; write nothing")
		fs.BoolVar(&noMCP, "no-mcp", false, "do not register cx's MCP server (search from inside Codex)")
		cli.JSONFlag(&asJSON)(fs)
	})
	if ic == nil {
		return code
	}
	in, caps, codexErr := ic.in, ic.caps, ic.codexErr
	out := installJSON{HooksPath: in.HooksPath(), DryRun: dryRun, Trusted: []string{}, Warnings: []string{}, Codex: caps.Version}
	if dryRun {
		diff, changed, err := in.PlanDiff()
		if err != nil {
			a.errorf("install: %v", err)
			return 1
		}
		out.Changed, out.Diff = changed, diff
		switch {
		case asJSON:
			a.printJSON(out)
		case !changed:
			fmt.Fprintf(a.stdout, "%s: cx's hooks are already installed; nothing to change\n", in.HooksPath())
		default:
			fmt.Fprint(a.stdout, out.Diff)
		}
		return 0
	}
	if codexErr != nil {
		w := fmt.Sprintf("%v: hooks are written, but their trust cannot be recorded without Codex", codexErr)
		out.Warnings = append(out.Warnings, w)
		a.errorf("warning: %s", w)
	}
	for _, c := range lifecycle.InstallNotes(ic.cfg, in.CodexHome, a.getenv) {
		w := c.Detail
		if c.Fix != "" {
			w += "; " + c.Fix
		}
		out.Warnings = append(out.Warnings, w)
		a.errorf("note: %s", w)
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := in.Install(ictx)
	if err != nil {
		a.errorf("install: %v", err)
		if in.Trust && res.Changed {
			a.errorf("the hooks are in %s but not trusted: start `codex` once and choose \"Trust all\" on the \"Hooks need review\" screen (or run `cx ctl install` again)", in.HooksPath())
		}
		return 1
	}
	out.Changed = res.Changed
	out.Trusted = append(out.Trusted, res.Trusted...)
	out.MCP = "skipped (--no-mcp)"
	if !noMCP {
		if changed, err := in.InstallMCP(ictx); err != nil {
			out.MCP = "not registered: " + err.Error()
			out.Warnings = append(out.Warnings, "mcp: "+err.Error())
			a.errorf("warning: cx's MCP server: %v", err)
		} else if out.MCP = "unchanged"; changed {
			out.MCP = "registered"
		}
	}
	out.Import = a.importable(ictx, ic.cfg, in.CodexHome)
	if _, err := os.Stat(in.HooksPath() + ".bak"); err == nil && res.Changed {
		out.Backup = in.HooksPath() + ".bak"
	}
	if asJSON {
		a.printJSON(out)
		return 0
	}
	if res.Changed {
		fmt.Fprintf(a.stdout, "installed cx's hooks in %s\n", in.HooksPath())
		if out.Backup != "" {
			fmt.Fprintf(a.stdout, "the previous file is kept as %s\n", out.Backup)
		}
	} else {
		fmt.Fprintf(a.stdout, "cx's hooks are already in %s\n", in.HooksPath())
	}
	switch {
	case in.Trust:
		fmt.Fprintf(a.stdout, "trusted %d hook(s) through Codex %s's app-server\n", len(res.Trusted), caps.Version)
	case codexErr == nil:
		fmt.Fprintf(a.stdout, "Codex %s runs hooks without a trust step\n", caps.Version)
	}
	fmt.Fprintf(a.stdout, "MCP server %q (search from inside Codex): %s\n", hookcfg.MCPName, out.MCP)
	if out.Import > 0 {
		fmt.Fprintf(a.stdout, "%d earlier Codex session(s) are not archived yet; `cx ctl import` makes them searchable\n", out.Import)
	}
	return 0
}

// importable counts the sessions of codexHome `cx ctl import` would take
// (0, quietly, when the ledger cannot be read: doctor says why).
func (a *app) importable(ctx context.Context, cfg config.Config, codexHome string) int {
	m, err := lifecycle.Open(ctx, cfg, lifecycle.Options{})
	if err != nil {
		return 0
	}
	defer m.Close()
	res, err := m.Import(ctx, lifecycle.ImportOptions{CodexHome: codexHome, DryRun: true})
	if err != nil {
		return 0
	}
	return res.Remaining
}

func (a *app) ctlUninstall(ctx context.Context, args []string) int {
	var asJSON bool
	ic, code := a.installerCommand(ctx, "uninstall", args, cli.JSONFlag(&asJSON))
	if ic == nil {
		return code
	}
	in := ic.in
	uctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := in.Uninstall(uctx)
	if err != nil {
		a.errorf("uninstall: %v", err)
		return 1
	}
	if _, err := in.UninstallMCP(uctx); err != nil {
		res.Warnings = append(res.Warnings, "mcp: "+err.Error())
	}
	if res.ConfigCreated {
		if err := in.RemoveEmptyConfig(); err != nil {
			res.Warnings = append(res.Warnings, err.Error())
		}
	}
	for _, w := range res.Warnings {
		a.errorf("warning: %s", w)
	}
	if asJSON {
		a.printJSON(installJSON{HooksPath: in.HooksPath(), Changed: res.Changed, Trusted: []string{}, Warnings: append([]string{}, res.Warnings...)})
		return 0
	}
	fmt.Fprintf(a.stdout, "removed cx's hooks from %s\n", in.HooksPath())
	return 0
}

func (a *app) ctlDoctor(ctx context.Context, args []string) int {
	var asJSON bool
	var codexHome string
	if _, code, ok := a.args(cli.Spec{Name: "doctor", Define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		cli.JSONFlag(&asJSON)(fs)
	}}, args); !ok {
		return code
	}
	var checks []health.Check
	add := func(c health.Check) { checks = append(checks, c) }
	cfg, err := config.Load(a.getenv)
	add(config.Check(cfg, err))
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ic, err := a.installer(dctx, cfg, codexHome)
	if ic.codexErr != nil {
		add(health.Check{Name: "codex", Detail: ic.codexErr.Error(), Fix: "install Codex (npm install -g @openai/codex) or set CX_CODEX_BIN"})
	} else {
		add(health.Check{Name: "codex", OK: true, Detail: fmt.Sprintf("%s %s (found as %s)", ic.bin.Path, ic.caps.Version, ic.bin.Found)})
	}
	doctorHome := ""
	if err == nil {
		checks = append(checks, ic.in.Checks(dctx, cwd())...)
		checks = append(checks, ic.in.MCPCheck(dctx))
		doctorHome = ic.in.CodexHome
	}
	checks = append(checks, lifecycle.Doctor(dctx, cfg, doctorHome, a.getenv)...)
	ok := true
	for _, c := range checks {
		ok = ok && c.OK
	}
	if asJSON {
		a.printJSON(map[string]any{"ok": ok, "checks": checks})
	} else {
		for _, c := range checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(a.stdout, "%s %-16s %s\n", mark, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(a.stdout, "     fix: %s\n", c.Fix)
			}
		}
	}
	if !ok {
		return 1
	}
	return 0
}
