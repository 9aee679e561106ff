package main

import (
	"context"
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
