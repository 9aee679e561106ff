package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cx/internal/config"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/sink"
	ovsink "cx/internal/sink/openviking"
)

// Doctor is the ledger's and the sinks' part of `cx ctl doctor`: the
// ledger opens and is whole, the outbox has nothing parked, every run was
// recorded, each configured sink that can check itself works, and the
// OpenViking Codex plugin is not writing the same sessions unasked.
func Doctor(ctx context.Context, cfg config.Config, codexHome string, getenv func(string) (string, bool)) []health.Check {
	var out []health.Check
	if cfg.Home != "" {
		c, recovered := checkLedger(ctx, cfg)
		u := checkUnrecorded(cfg.Home, recovered)
		if !c.OK && u.OK && c.Fix != fixParked {
			// Nothing says a run was lost, but none started now is recorded.
			u = health.Check{Name: u.Name, Detail: "runs started now are not recorded (Codex runs, unrecorded) until the ledger can be written (see its fix)"}
		}
		out = append(out, c, u)
	}
	sinks := defaultSinks(sink.Host{Cfg: cfg, Getenv: getenv, Now: nowUTC})
	for _, name := range cfg.Sinks {
		if ch, ok := sinks[name].(sink.Checker); ok {
			out = append(out, ch.Check(ctx))
		}
	}
	if codexHome == "" {
		return out
	}
	return append(out, InstallNotes(cfg, codexHome, getenv)...)
}

// InstallNotes are what `cx ctl install` tells about the sinks: the
// OpenViking Codex plugin, when it is there.
func InstallNotes(cfg config.Config, codexHome string, getenv func(string) (string, bool)) []health.Check {
	if c, found := ovsink.PluginCheck(cfg, codexHome, getenv); found {
		return []health.Check{c}
	}
	return nil
}

// checkUnrecorded reports runs that could not write the ledger (a full
// disk, an I/O error, a damaged or locked ledger), and what recovered them.
func checkUnrecorded(home, recoveredNote string) health.Check {
	crumbs := Unrecorded(home)
	if len(crumbs) > 0 {
		return health.Check{Name: "unrecorded runs", Detail: fmt.Sprintf("%d run(s) since %s could not write the ledger; their sessions are safe in Codex's rollouts",
			len(crumbs), rfc3339(crumbs[0].Started)), Fix: "once the ledger can be written: cx ctl sweep (records and commits them; the next cx start does too)"}
	}
	detail := "every run was recorded"
	if recoveredNote != "" {
		detail += "; " + recoveredNote
	}
	return health.Check{Name: "unrecorded runs", OK: true, Detail: detail}
}

// fixParked is the ledger check's fix when only parked jobs fail it.
const fixParked = "see `cx ctl status`, then `cx ctl retry --all`"

// checkLedger checks the ledger; it also says when sessions were last
// recorded late from their rollouts ("" if never).
func checkLedger(ctx context.Context, cfg config.Config) (c health.Check, recovered string) {
	path := filepath.Join(cfg.Home, ledger.FileName)
	if err := config.EnsureHome(cfg.Home); err != nil {
		return health.Check{Name: "ledger", Detail: err.Error(), Fix: ledgerFix(cfg, err)}, ""
	}
	db, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		return health.Check{Name: "ledger", Detail: err.Error(), Fix: ledgerFix(cfg, err)}, ""
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return health.Check{Name: "ledger", Detail: err.Error(), Fix: "move the ledger aside"}, ""
	}
	if e, err := db.LastEvent(ctx, "rollouts.recovered"); err == nil {
		recovered = fmt.Sprintf("last on %s: %s recorded late from their rollouts", rfc3339(e.At), e.Detail)
	}
	pending, _ := db.Jobs(ctx, ledger.JobPending, ledger.JobLeased)
	parked, _ := db.Jobs(ctx, ledger.JobParked)
	c = health.Check{Name: "ledger", OK: len(parked) == 0, Detail: fmt.Sprintf("%s: %d pending, %d parked job(s)", db.Path, len(pending), len(parked))}
	if len(parked) > 0 {
		c.Fix = fixParked
	}
	return c, recovered
}

// ledgerFix is what to do about a ledger that cannot be opened, by why.
func ledgerFix(cfg config.Config, err error) string {
	path := filepath.Join(cfg.Home, ledger.FileName)
	switch {
	case errors.Is(err, config.ErrHome):
		return "move what stands at " + cfg.Home + " aside, or set CX_HOME to a directory cx may create and write"
	case ledger.IsDamaged(err):
		return "move " + path + " aside; cx starts a new ledger (rollouts keep every session)"
	case ledger.CannotWrite(err):
		return "make " + cfg.Home + " writable, or set CX_HOME to a directory that is (meanwhile search, show, sessions and status read it as it is)"
	}
	if _, serr := os.Stat(filepath.Join(cfg.Home, "logs", "cx.log")); serr == nil {
		return "see " + filepath.Join(cfg.Home, "logs", "cx.log")
	}
	return "check that " + path + " can be created and written"
}

// LedgerAdvice is what to do when err (a ledger failure) is the ledger's
// own trouble — damaged, or in a CX_HOME cx cannot use or write — and ""
// otherwise: a command that failed on it says so beside its error.
func LedgerAdvice(cfg config.Config, err error) string {
	if errors.Is(err, config.ErrHome) || ledger.IsDamaged(err) || ledger.CannotWrite(err) {
		return "to fix: " + ledgerFix(cfg, err)
	}
	return ""
}
