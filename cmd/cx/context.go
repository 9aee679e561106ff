package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"cx/inject"
	"cx/internal/cli"
	"cx/internal/ledger"
)

// ctlContext prints the block cx would give a new session started here
// (what SessionStart injects), so a person can see and check it.
func (a *app) ctlContext(ctx context.Context, args []string) error {
	var dir string
	var asJSON bool
	if _, err := a.args(cli.Spec{Name: "context", Define: func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "cwd", "", "the session's working `DIR` (default: here)")
		cli.JSONFlag(&asJSON)(fs)
	}}, args); err != nil {
		return err
	}
	if dir == "" {
		dir = cwd()
	}
	dir, _ = filepath.Abs(dir)
	return a.withViews(ctx, func(db *ledger.DB) error {
		cfg, _ := a.loadConfigToRead() // read once: withViews did
		block := inject.AtStart(ctx, cfg, db, "startup", dir)
		if block == "" {
			// A session's directory may be gone and its project known; a
			// mistyped one is said so, not answered as a place with nothing.
			if err := cli.ExistingDir("cwd", dir); err != nil {
				return fmt.Errorf("context: %w, and no earlier session of its project", err)
			}
		}
		if asJSON {
			a.printJSON(struct {
				Cwd   string `json:"cwd"`
				Chars int    `json:"chars"`
				Block string `json:"block"`
			}{dir, len([]rune(block)), block})
			return nil
		}
		if block == "" {
			block = "(nothing yet: no earlier session of this project)"
		}
		fmt.Fprintln(a.stdout, block)
		return nil
	})
}
