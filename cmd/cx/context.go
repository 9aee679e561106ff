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
	var asJSON bool
	if _, code, ok := a.args(ctlArgs{name: "context", define: func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "cwd", "", "the session's working `DIR` (default: here)")
		jsonFlag(&asJSON)(fs)
	}}, args); !ok {
		return code
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
	if asJSON {
		a.printJSON(struct {
			Cwd   string `json:"cwd"`
			Chars int    `json:"chars"`
			Block string `json:"block"`
		}{dir, len([]rune(block)), block})
		return 0
	}
	if block == "" {
		fmt.Fprintln(a.stdout, "(nothing yet: no earlier session of this project)")
		return 0
	}
	fmt.Fprintln(a.stdout, block)
	return 0
}
