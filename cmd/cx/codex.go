package main

import (
	"context"
	"errors"
	"os"

	"cx/internal/config"
	"cx/supervisor"
)

func (a *app) loadConfig() (config.Config, error) {
	cfg, err := config.Load(a.getenv)
	for _, w := range cfg.Warnings {
		a.errorf("warning: %s", w)
	}
	return cfg, err
}

// loadConfigToRead is the configuration of a command that only reads (the
// MCP server, status, sessions, show, search, recall, context): a config
// file that does not parse is one warning, and the command runs on the
// defaults, as Codex does past a bad config of its own.
func (a *app) loadConfigToRead() (config.Config, error) {
	cfg, err := a.loadConfig()
	if errors.Is(err, config.ErrParse) {
		a.errorf("warning: %v; running on the defaults (`cx ctl doctor` says how to fix it)", err)
		return config.OnDefaults(a.getenv, err)
	}
	return cfg, err
}

// runCodex is `cx [codex args…]`.
func (a *app) runCodex(ctx context.Context, args []string) int {
	cfg, err := a.loadConfig()
	return supervisor.RunCodex(ctx, supervisor.Launch{Args: args, Cfg: cfg, CfgErr: err, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr,
		Getenv: a.getenv, Cwd: cwd(), Errorf: a.errorf})
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}
