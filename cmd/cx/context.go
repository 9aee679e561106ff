package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"cx/inject"
	"cx/internal/ledger"
)

// ctlContext prints the block cx would give a new session started here
// (what SessionStart injects), so a person can see and check it.
func (a *app) ctlContext(ctx context.Context, args []string) int {
	var dir string
	if _, ok := a.parseFlags("context", args, func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "cwd", "", "the directory of the session (default: here)")
	}); !ok {
		return usageExit
	}
	cfg, err := a.loadConfig()
	if err != nil {
		a.errorf("%v", err)
		return 1
	}
	if dir == "" {
		dir = cwd()
	}
	dir, _ = filepath.Abs(dir)
	db, err := ledger.Open(ctx, filepath.Join(cfg.Home, ledger.FileName), ledger.Options{})
	if err != nil {
		a.errorf("%v", err)
		return 1
	}
	defer db.Close()
	block := inject.ForSessionStart(ctx, inject.Request{Home: cfg.Home, DB: db, Source: "startup", Cwd: dir, MaxChars: cfg.Inject.MaxChars})
	if block == "" {
		fmt.Fprintln(a.stdout, "(nothing yet: no earlier session of this project)")
		return 0
	}
	fmt.Fprintln(a.stdout, block)
	return 0
}
