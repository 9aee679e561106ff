package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"cx/internal/cli"
	"cx/internal/codex"
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
	a.render(asJSON, r, func(w io.Writer) { r.WriteInstall(w, s) })
	return nil
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
	a.render(asJSON, r, r.WriteUninstall)
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
	a.render(asJSON, r, r.WriteText)
	if !r.OK {
		return exitStatus(1)
	}
	return nil
}
