package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"cx/internal/cli"
	"cx/internal/config"
	"cx/internal/crumbs"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/nearwords"
	"cx/internal/readmodel"
	"cx/internal/sink"
	"cx/internal/sinks"
)

// DoctorReport is `cx ctl doctor`: every check, and whether all passed.
type DoctorReport struct {
	Checks []health.Check `json:"checks"`
	OK     bool           `json:"ok"`
}

// Doctor checks cx's config, the Codex found, cx's hooks and MCP server in
// codexHome ("": Codex's own) as Codex sees them from cwd, and
// ledgerChecks'.
func Doctor(ctx context.Context, getenv func(string) (string, bool), codexHome, cwd string) DoctorReport {
	var checks []health.Check
	add := func(c health.Check) { checks = append(checks, c) }
	cfg, err := config.Load(getenv)
	cfgErr := err
	add(config.Check(cfg, err))
	add(recallCheck(cfg))
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := Open(dctx, cfg, codexHome, getenv)
	if s.CodexErr != nil {
		add(health.Check{Name: "codex", Detail: s.CodexErr.Error(), Fix: "install Codex (npm install -g @openai/codex) or set CX_CODEX_BIN"})
	} else {
		add(health.Check{Name: "codex", OK: true, Detail: fmt.Sprintf("%s %s (found as %s)", s.Bin.Path, s.Caps.Version, s.Bin.Found)})
	}
	doctorHome := ""
	if err == nil {
		checks = append(checks, s.In.Checks(dctx, cwd)...)
		checks = append(checks, s.In.MCPCheck(dctx))
		doctorHome = s.In.CodexHome
	}
	checks = append(checks, ledgerChecks(dctx, cfg, doctorHome, getenv)...)
	install := "cx ctl install"
	if codexHome != "" {
		// The fix is for the home asked about, not the default one.
		install += " --codex-home " + codexHome
	}
	for i, c := range checks {
		if c.Fix != "cx ctl install" {
			continue
		}
		checks[i].Fix = install
		if errors.Is(cfgErr, config.ErrParse) {
			// install refuses a config it cannot parse: that comes first.
			checks[i].Fix = "fix " + cfg.Path + " first (see config above), then " + install
		}
	}
	r := DoctorReport{OK: true, Checks: checks}
	for _, c := range checks {
		r.OK = r.OK && c.OK
	}
	return r
}

// recallCheck says whether per-prompt recall is on, and its dense stage:
// the nearness of words in meaning (internal/nearwords), part of the
// binary — a build without its table is a broken install.
func recallCheck(cfg config.Config) health.Check {
	c := health.Check{Name: "recall", OK: true}
	switch {
	case !cfg.Recall.Enabled:
		c.Detail = "per-prompt recall off ([recall] enabled = false or CX_RECALL_OFF=1); search and cx's MCP server still search the archive"
	case !cfg.Recall.Dense:
		c.Detail = "per-prompt recall on; its dense stage (words near in meaning) off ([recall] dense = false)"
	case nearwords.Len() == 0:
		c.OK = false
		c.Detail = "per-prompt recall on; its dense stage is on but this cx binary has no word table (a damaged build)"
		c.Fix = "reinstall cx (the README's install command)"
	default:
		c.Detail = fmt.Sprintf("per-prompt recall on, with its dense stage: words near in meaning, %d terms ([recall] dense = false turns it off)", nearwords.Len())
	}
	return c
}

// ledgerChecks are the ledger's and the sinks' part of doctor: the ledger
// opens and is whole, the outbox has nothing parked, every run was
// recorded, each configured sink that can check itself works, and the
// OpenViking Codex plugin is not writing the same sessions unasked.
func ledgerChecks(ctx context.Context, cfg config.Config, codexHome string, getenv func(string) (string, bool)) []health.Check {
	var out []health.Check
	if cfg.Home != "" {
		c, recovered := checkLedger(ctx, cfg)
		notArchived := 0
		if c.OK && codexHome != "" && ledgerExists(cfg) {
			notArchived = importable(ctx, cfg, codexHome)
		}
		u := checkUnrecorded(cfg.Home, recovered, notArchived)
		if !c.OK && u.OK && c.Fix != fixParked {
			// Nothing says a run was lost, but none started now is recorded.
			u = health.Check{Name: u.Name, Detail: "runs started now are not recorded (Codex runs, unrecorded) until the ledger can be written (see its fix)"}
		}
		out = append(out, c, u)
	}
	configured := sinks.Configured(cfg, getenv)
	for _, name := range cfg.Sinks {
		if ch, ok := configured[name].(sink.Checker); ok {
			out = append(out, ch.Check(ctx))
		}
	}
	if codexHome == "" {
		return out
	}
	return append(out, installNotes(cfg, codexHome, getenv)...)
}

// installNotes are what `cx ctl install` tells about the sinks: the
// OpenViking Codex plugin, when it is there.
func installNotes(cfg config.Config, codexHome string, getenv func(string) (string, bool)) []health.Check {
	if c, found := sinks.PluginCheck(cfg, codexHome, getenv); found {
		return []health.Check{c}
	}
	return nil
}

// checkUnrecorded reports runs that could not write the ledger (a full
// disk, an I/O error, a damaged or locked ledger), and what recovered them.
// notArchived counts the sessions in Codex's rollouts cx's archive does
// not hold (what `cx ctl import --dry-run` finds): said, with the command
// that records them, so this check and import agree.
func checkUnrecorded(home, recoveredNote string, notArchived int) health.Check {
	crumbs := crumbs.List(home)
	if len(crumbs) > 0 {
		return health.Check{Name: "unrecorded runs", Detail: fmt.Sprintf("%d run(s) since %s could not write the ledger; their sessions are safe in Codex's rollouts",
			len(crumbs), readmodel.RFC3339(crumbs[0].Started)), Fix: "once the ledger can be written: cx ctl sweep (records and commits them; the next cx start does too)"}
	}
	detail := "every run was recorded"
	if notArchived > 0 {
		detail = fmt.Sprintf("every run cx recorded wrote the ledger; %s in Codex's rollouts %s not archived (Codex run without cx's hooks, or while cx could not record): `cx ctl import` records them",
			cli.Count(notArchived, "session"), map[bool]string{true: "is", false: "are"}[notArchived == 1])
	}
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
	if !ledgerExists(cfg) {
		// Doctor asks; it does not make a ledger before any run or install.
		return health.Check{Name: "ledger", OK: true, Detail: "none yet at " + filepath.Join(cfg.Home, ledger.FileName) + " (the first run or `cx ctl install` makes it)"}, ""
	}
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{})
	if err != nil {
		return health.Check{Name: "ledger", Detail: err.Error(), Fix: ledger.Fix(cfg.Home, err)}, ""
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return health.Check{Name: "ledger", Detail: err.Error(), Fix: "move the ledger aside"}, ""
	}
	if e, err := db.LastEvent(ctx, "rollouts.recovered"); err == nil {
		recovered = fmt.Sprintf("last on %s: %s recorded late from their rollouts", readmodel.RFC3339(e.At), e.Detail)
	}
	pending, _ := db.Jobs(ctx, ledger.JobPending, ledger.JobLeased)
	parked, _ := db.Jobs(ctx, ledger.JobParked)
	c = health.Check{Name: "ledger", OK: len(parked) == 0, Detail: fmt.Sprintf("%s: %d pending, %d parked job(s)", db.Path, len(pending), len(parked))}
	if len(parked) > 0 {
		c.Fix = fixParked
	}
	return c, recovered
}

// WriteText is what `cx ctl doctor` prints of r: a line per check, its fix
// under it.
func (r DoctorReport) WriteText(w io.Writer) {
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %-16s %s\n", mark, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "     fix: %s\n", c.Fix)
		}
	}
}

// ledgerExists reports whether CX_HOME holds a ledger file (or anything in
// its place: opening it then says what is wrong).
func ledgerExists(cfg config.Config) bool {
	_, err := os.Lstat(filepath.Join(cfg.Home, ledger.FileName))
	return !errors.Is(err, fs.ErrNotExist)
}
