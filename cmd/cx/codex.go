package main

import (
	"context"
	"os"

	"cx/internal/config"
	"cx/supervisor"
)

// loadConfig is cx's configuration, read once per process: a command that
// asks for it twice (recall reads it, then opens the archive) warns once.
func (a *app) loadConfig() (config.Config, error) {
	if a.cfg == nil {
		cfg, err := config.Load(a.getenv)
		for _, w := range cfg.Warnings {
			a.errorf("warning: %s", w)
		}
		a.cfg = &loadedConfig{cfg, err}
	}
	return a.cfg.cfg, a.cfg.err
}

// loadedConfig is the configuration a process read, and how reading it went.
type loadedConfig struct {
	cfg config.Config
	err error
}

// loadConfigToRead is the configuration of a command that only reads (the
// MCP server, status, sessions, show, search, recall, context): a config
// file that does not parse is one warning, and the command runs on the
// defaults, as Codex does past a bad config of its own.
func (a *app) loadConfigToRead() (config.Config, error) {
	warned := a.cfg != nil
	cfg, err := a.loadConfig()
	cfg, warning, err := config.ToRead(a.getenv, cfg, err)
	if warning != "" && !warned {
		a.errorf("warning: %s", warning)
	}
	return cfg, err
}

// runCodex is `cx [codex args…]`.
func (a *app) runCodex(ctx context.Context, args []string) int {
	cfg, err := a.loadConfig()
	return supervisor.RunCodex(ctx, supervisor.Launch{Args: args, Cfg: cfg, CfgErr: err, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr,
		Getenv: a.getenv, Cwd: cwd(), Errorf: a.errorf, OneP: a.oneP, StartsHost: a.startsHost})
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}
