package main

import (
	"context"
	"os"
	"path/filepath"

	"cx/hookcfg"
	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
)

// hooksActive reports whether cx's hooks will run in this Codex home: every
// entry installed for this cx binary and, where Codex requires trust, trust
// recorded for them (checked from config.toml; `cx ctl doctor` asks Codex).
func hooksActive(ctx context.Context, codexHome, self string, caps codex.Caps) (bool, string) {
	in := &hookcfg.Installer{CodexHome: codexHome, CXPath: self}
	st, err := in.Inspect(ctx)
	switch {
	case err != nil:
		return false, err.Error()
	case len(st.Missing) > 0:
		return false, "cx's hooks are not installed"
	case len(st.WrongPath) > 0:
		return false, "cx's hooks run another cx binary"
	}
	if caps.HasHookTrust() {
		data, _ := os.ReadFile(in.ConfigPath())
		if !codex.TrustRecorded(string(data), in.HooksPath(), "SessionStart") {
			return false, "cx's hooks are not trusted"
		}
	}
	return true, ""
}

// fallbackArgs gives Codex cx's context through its developer
// instructions when its hooks cannot: merged with the user's own (from their
// -c, or from config.toml).
func fallbackArgs(ctx context.Context, a *app, cfg config.Config, codexHome string, args []string, reason string) []string {
	db, err := ledger.Open(ctx, filepath.Join(cfg.Home, ledger.FileName), ledger.Options{})
	if err != nil {
		db = nil
	}
	block := inject.ForSessionStart(ctx, inject.Request{Home: cfg.Home, DB: db, Source: "fallback", Cwd: cwd(), MaxChars: cfg.Inject.MaxChars})
	if db != nil {
		db.Close()
	}
	if block == "" {
		return args
	}
	user, at := codex.UserDeveloperInstructions(args, codexHome)
	a.errorf("%s: giving Codex cx's context through %s instead (run `cx ctl install` to use hooks)", reason, codex.DeveloperInstructionsFlag)
	return codex.WithDeveloperInstructions(args, at, inject.DeveloperInstructions(user, block))
}
