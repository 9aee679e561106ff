package inject

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"cx/internal/codex"
	"cx/internal/config"
)

// AtStart is the block a session starting in cwd would be given by its
// SessionStart hook (source "startup" for `cx ctl context`, "fallback" when
// hooks cannot give it), read from db (the ledger in cfg.Home, opened by
// the caller to read).
func AtStart(ctx context.Context, cfg config.Config, db Ledger, source, cwd string) string {
	return ForSessionStart(ctx, Request{Home: cfg.Home, Ledger: db, Source: source, Cwd: cwd, MaxChars: cfg.Inject.MaxChars})
}

// AtLaunch is what a launch of Codex is given (user: the user's arguments;
// codexArgs: what cx starts Codex with) when Codex's hooks will not give
// the context at session start — not installed, not trusted: the block
// through Codex's developer instructions, for the interactive TUI and exec
// (the others start no session of the user's). The note says so to the user ("" when nothing
// was added). Checking costs one stat when there is no continuity yet;
// only then is hooksActive asked (the installer's answer, and why not).
//
// readLedger opens the ledger to read, for the archive part of the block
// (nil when it cannot: the block goes without), and says how to close it.
func AtLaunch(ctx context.Context, cfg config.Config, readLedger func(context.Context) (Ledger, func()), codexHome, cwd string, user, codexArgs []string, caps codex.Caps, hooksActive func(context.Context) (bool, string)) ([]string, string) {
	if !cfg.Inject.Enabled || !hasContinuity(cfg.Home) || !codex.StartsSession(user, caps) {
		return codexArgs, ""
	}
	ok, why := hooksActive(ctx)
	if ok {
		return codexArgs, ""
	}
	args, given := fallbackArgs(ctx, cfg, readLedger, codexHome, cwd, codexArgs)
	if !given {
		return args, ""
	}
	return args, fmt.Sprintf("%s: giving Codex cx's context through %s instead (run `cx ctl install` to use hooks)", why, codex.DeveloperInstructionsFlag)
}

// hasContinuity reports whether any earlier session left context to give
// (one stat: a first run, or a home without local archives, pays nothing).
func hasContinuity(home string) bool {
	_, err := os.Stat(filepath.Join(home, "projects"))
	return err == nil
}

// fallbackArgs gives Codex cx's context at launch, through its developer
// instructions, when its hooks cannot (not installed, not trusted): merged
// with the user's own (from their -c, or from config.toml). It reports
// whether anything was added; the ledger, when it cannot be read, only
// costs the archive part of the block.
func fallbackArgs(ctx context.Context, cfg config.Config, readLedger func(context.Context) (Ledger, func()), codexHome, cwd string, args []string) ([]string, bool) {
	db, done := readLedger(ctx)
	defer done()
	block := AtStart(ctx, cfg, db, "fallback", cwd)
	if block == "" {
		return args, false
	}
	user, at := codex.UserDeveloperInstructions(args, codexHome)
	return codex.WithDeveloperInstructions(args, at, DeveloperInstructions(user, block)), true
}
