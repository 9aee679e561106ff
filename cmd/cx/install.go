package main

import (
	"context"
	"flag"
	"fmt"

	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/mcpproto"
	"cx/setup"
)

// setupCommand parses --codex-home (and the command's own flags) and
// opens the setup.
func (a *app) setupCommand(ctx context.Context, name string, args []string, define func(*flag.FlagSet)) (*setup.Setup, error) {
	var codexHome string
	if _, err := a.args(cli.Spec{Name: name, Define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		define(fs)
	}}, args); err != nil {
		return nil, err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	return setup.Open(ctx, cfg, codexHome, a.getenv)
}

func (a *app) ctlInstall(ctx context.Context, args []string) error {
	var o setup.InstallOptions
	var asJSON bool
	s, err := a.setupCommand(ctx, "install", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&o.DryRun, "dry-run", false, "print the change to hooks.json; write nothing")
		fs.BoolVar(&o.NoMCP, "no-mcp", false, "do not register cx's MCP server (search from inside Codex)")
		cli.JSONFlag(&asJSON)(fs)
	})
	if err != nil {
		return err
	}
	r, err := s.Install(ctx, o)
	for _, line := range r.Said {
		a.errorf("%s", line)
	}
	if err != nil {
		a.errorf("install: %v", err)
		if r.Hint != "" {
			a.errorf("%s", r.Hint)
		}
		return exitStatus(1)
	}
	switch {
	case asJSON:
		a.printJSON(r)
	case o.DryRun && !r.Changed:
		fmt.Fprintf(a.stdout, "%s: cx's hooks are already installed; nothing to change\n", r.HooksPath)
	case o.DryRun:
		fmt.Fprint(a.stdout, r.Diff)
	default:
		a.printInstall(s, r)
	}
	return nil
}

func (a *app) printInstall(s *setup.Setup, r setup.Report) {
	if r.Changed {
		fmt.Fprintf(a.stdout, "installed cx's hooks in %s\n", r.HooksPath)
		if r.Backup != "" {
			fmt.Fprintf(a.stdout, "the previous file is kept as %s\n", r.Backup)
		}
	} else {
		fmt.Fprintf(a.stdout, "cx's hooks are already in %s\n", r.HooksPath)
	}
	switch {
	case s.In.Trust:
		fmt.Fprintf(a.stdout, "trusted %d hook(s) through Codex %s's app-server\n", len(r.Trusted), s.Caps.Version)
	case s.CodexErr == nil:
		fmt.Fprintf(a.stdout, "Codex %s runs hooks without a trust step\n", s.Caps.Version)
	}
	fmt.Fprintf(a.stdout, "MCP server %q (search from inside Codex): %s\n", mcpproto.Name, r.MCP)
	if r.Import > 0 {
		fmt.Fprintf(a.stdout, "%s not archived yet; `cx ctl import` makes them searchable\n", cli.Count(r.Import, "earlier Codex session"))
	}
}

func (a *app) ctlUninstall(ctx context.Context, args []string) error {
	var asJSON bool
	s, err := a.setupCommand(ctx, "uninstall", args, cli.JSONFlag(&asJSON))
	if err != nil {
		return err
	}
	r, err := s.Uninstall(ctx)
	if err != nil {
		return fmt.Errorf("uninstall: %v", err)
	}
	for _, line := range r.Said {
		a.errorf("%s", line)
	}
	if asJSON {
		a.printJSON(r)
		return nil
	}
	switch {
	case r.HooksFile == "removed":
		fmt.Fprintf(a.stdout, "removed %s: cx's install created it and nothing else was in it\n", r.HooksPath)
	case r.HooksFile == "absent":
		fmt.Fprintf(a.stdout, "no %s: nothing to remove\n", r.HooksPath)
	case r.Changed:
		fmt.Fprintf(a.stdout, "removed cx's hooks from %s\n", r.HooksPath)
	default:
		fmt.Fprintf(a.stdout, "no hooks of cx's in %s: nothing to remove\n", r.HooksPath)
	}
	if r.MCP == "removed" {
		fmt.Fprintf(a.stdout, "removed cx's MCP server %q from Codex's config\n", mcpproto.Name)
	}
	return nil
}

func (a *app) ctlDoctor(ctx context.Context, args []string) error {
	var asJSON bool
	var codexHome string
	if _, err := a.args(cli.Spec{Name: "doctor", Define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		cli.JSONFlag(&asJSON)(fs)
	}, Check: func([]string) error { return cli.ExistingDir("codex-home", codexHome) }}, args); err != nil {
		return err
	}
	r := setup.Doctor(ctx, a.getenv, codexHome, cwd())
	if asJSON {
		a.printJSON(r)
	} else {
		for _, c := range r.Checks {
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
	if !r.OK {
		return exitStatus(1)
	}
	return nil
}
