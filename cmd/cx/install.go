package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cx/hookcfg"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/openviking"
	"cx/lifecycle"
)

// installer builds the hookcfg.Installer for Codex's home (or --codex-home).
func (a *app) installer(ctx context.Context, cfg config.Config, codexHome string) (*hookcfg.Installer, codex.Binary, codex.Caps, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, codex.Binary{}, codex.Caps{}, fmt.Errorf("find the cx binary: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	if codexHome == "" {
		codexHome = codex.Home(a.getenv)
	}
	codexHome, _ = filepath.Abs(codexHome)
	in := &hookcfg.Installer{CodexHome: codexHome, CXPath: self, StateDir: filepath.Join(cfg.Home, "install")}
	bin, caps, err := a.findCodex(ctx, cfg)
	if err != nil {
		return in, bin, caps, err
	}
	in.Codex = bin.Path
	in.CodexEnv = codex.Env(os.Environ(), bin, []string{codex.HomeEnv(codexHome), "CX_HOOKS_OFF=1"}, "CX_RUN_ID")
	in.Trust = caps.HasHookTrust()
	return in, bin, caps, nil
}

// installCommand is what install and uninstall share: cx's config, the
// installer for Codex's home, and what Codex supports.
type installCommand struct {
	cfg      config.Config
	in       *hookcfg.Installer
	caps     codex.Caps
	codexErr error // no Codex: hooks can be written, not trusted
}

// installerCommand parses --codex-home (and the command's own flags) and
// builds the installCommand; nil comes with the exit code.
func (a *app) installerCommand(ctx context.Context, name string, args []string, define func(*flag.FlagSet)) (*installCommand, int) {
	var codexHome string
	if _, code, ok := a.args(ctlArgs{name: name, define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		if define != nil {
			define(fs)
		}
	}}, args); !ok {
		return nil, code
	}
	cfg, err := a.loadConfig()
	if err != nil {
		a.errorf("%v", err)
		return nil, 1
	}
	in, _, caps, codexErr := a.installer(ctx, cfg, codexHome)
	if in == nil {
		a.errorf("%v", codexErr)
		return nil, 1
	}
	return &installCommand{cfg: cfg, in: in, caps: caps, codexErr: codexErr}, 0
}

// installJSON is what install and uninstall print with --json.
type installJSON struct {
	HooksPath string   `json:"hooks_path"`
	Changed   bool     `json:"changed"`
	DryRun    bool     `json:"dry_run,omitempty"`
	Diff      string   `json:"diff,omitempty"`
	Backup    string   `json:"backup,omitempty"`
	Trusted   []string `json:"trusted"`
	Codex     string   `json:"codex_version,omitempty"`
	Warnings  []string `json:"warnings"`
}

func (a *app) ctlInstall(ctx context.Context, args []string) int {
	var dryRun, asJSON bool
	ic, code := a.installerCommand(ctx, "install", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&dryRun, "dry-run", false, "print the change to hooks.json; write nothing")
		jsonFlag(&asJSON)(fs)
	})
	if ic == nil {
		return code
	}
	in, caps, codexErr := ic.in, ic.caps, ic.codexErr
	out := installJSON{HooksPath: in.HooksPath(), DryRun: dryRun, Trusted: []string{}, Warnings: []string{}, Codex: caps.Version}
	if dryRun {
		old, planned, changed, err := in.Plan()
		if err != nil {
			a.errorf("install: %v", err)
			return 1
		}
		out.Changed = changed
		if changed {
			out.Diff = unifiedDiff(in.HooksPath(), string(old), string(planned))
		}
		switch {
		case asJSON:
			a.printJSON(out)
		case !changed:
			fmt.Fprintf(a.stdout, "%s: cx's hooks are already installed; nothing to change\n", in.HooksPath())
		default:
			fmt.Fprint(a.stdout, out.Diff)
		}
		return 0
	}
	if codexErr != nil {
		w := fmt.Sprintf("%v: hooks are written, but their trust cannot be recorded without Codex", codexErr)
		out.Warnings = append(out.Warnings, w)
		a.errorf("warning: %s", w)
	}
	if c, found := doctorPlugin(ic.cfg, filepath.Dir(in.HooksPath()), a.getenv); found {
		w := c.Detail
		if c.Fix != "" {
			w += "; " + c.Fix
		}
		out.Warnings = append(out.Warnings, w)
		a.errorf("note: %s", w)
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := in.Install(ictx)
	if err != nil {
		a.errorf("install: %v", err)
		if in.Trust && res.Changed {
			a.errorf("the hooks are in %s but not trusted: start `codex` once and choose \"Trust all\" on the \"Hooks need review\" screen (or run `cx ctl install` again)", in.HooksPath())
		}
		return 1
	}
	out.Changed = res.Changed
	out.Trusted = append(out.Trusted, res.Trusted...)
	if _, err := os.Stat(in.HooksPath() + ".bak"); err == nil && res.Changed {
		out.Backup = in.HooksPath() + ".bak"
	}
	if asJSON {
		a.printJSON(out)
		return 0
	}
	if res.Changed {
		fmt.Fprintf(a.stdout, "installed cx's hooks in %s\n", in.HooksPath())
		if out.Backup != "" {
			fmt.Fprintf(a.stdout, "the previous file is kept as %s\n", out.Backup)
		}
	} else {
		fmt.Fprintf(a.stdout, "cx's hooks are already in %s\n", in.HooksPath())
	}
	switch {
	case in.Trust:
		fmt.Fprintf(a.stdout, "trusted %d hook(s) through Codex %s's app-server\n", len(res.Trusted), caps.Version)
	case codexErr == nil:
		fmt.Fprintf(a.stdout, "Codex %s runs hooks without a trust step\n", caps.Version)
	}
	return 0
}

func (a *app) ctlUninstall(ctx context.Context, args []string) int {
	var asJSON bool
	ic, code := a.installerCommand(ctx, "uninstall", args, jsonFlag(&asJSON))
	if ic == nil {
		return code
	}
	in := ic.in
	uctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := in.Uninstall(uctx)
	if err != nil {
		a.errorf("uninstall: %v", err)
		return 1
	}
	for _, w := range res.Warnings {
		a.errorf("warning: %s", w)
	}
	if asJSON {
		a.printJSON(installJSON{HooksPath: in.HooksPath(), Changed: res.Changed, Trusted: []string{}, Warnings: append([]string{}, res.Warnings...)})
		return 0
	}
	fmt.Fprintf(a.stdout, "removed cx's hooks from %s\n", in.HooksPath())
	return 0
}

// check is one doctor finding.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (a *app) ctlDoctor(ctx context.Context, args []string) int {
	var asJSON bool
	var codexHome string
	if _, code, ok := a.args(ctlArgs{name: "doctor", define: func(fs *flag.FlagSet) {
		fs.StringVar(&codexHome, "codex-home", "", codex.HomeFlagUsage)
		jsonFlag(&asJSON)(fs)
	}}, args); !ok {
		return code
	}
	var checks []check
	add := func(c check) { checks = append(checks, c) }
	cfg, err := config.Load(a.getenv)
	if err != nil {
		add(check{Name: "config", Detail: err.Error(), Fix: "fix " + cfg.Path})
	} else {
		detail := cfg.Path
		if !cfg.FileRead {
			detail = "no file at " + cfg.Path + ": cx runs on its defaults (sinks " + strings.Join(cfg.Sinks, ", ") + ")"
		}
		if len(cfg.Warnings) > 0 {
			detail += " (" + strings.Join(cfg.Warnings, "; ") + ")"
		}
		add(check{Name: "config", OK: true, Detail: detail})
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	in, bin, caps, codexErr := a.installer(dctx, cfg, codexHome)
	if codexErr != nil {
		add(check{Name: "codex", Detail: codexErr.Error(), Fix: "install Codex (npm install -g @openai/codex) or set CX_CODEX_BIN"})
	} else {
		add(check{Name: "codex", OK: true, Detail: fmt.Sprintf("%s %s (found as %s)", bin.Path, caps.Version, bin.Found)})
	}
	if in != nil {
		st, err := in.Inspect(dctx)
		switch {
		case err != nil:
			add(check{Name: "hooks installed", Detail: err.Error(), Fix: "fix the file, then `cx ctl install`"})
		case len(st.Missing) > 0:
			add(check{Name: "hooks installed", Detail: fmt.Sprintf("%s lacks cx's %s hook(s)", in.HooksPath(), strings.Join(st.Missing, ", ")), Fix: "cx ctl install"})
		case len(st.WrongPath) > 0:
			add(check{Name: "hooks installed", Detail: fmt.Sprintf("cx's %s hook(s) run another cx binary (cx moved?)", strings.Join(st.WrongPath, ", ")), Fix: "cx ctl install"})
		default:
			add(check{Name: "hooks installed", OK: true, Detail: in.HooksPath()})
		}
		if in.Trust && err == nil && len(st.Installed) > 0 {
			var untrusted []string
			for _, ev := range st.Installed {
				if st.Trust[ev] != "trusted" {
					untrusted = append(untrusted, fmt.Sprintf("%s (%s)", ev, orNone(st.Trust[ev])))
				}
			}
			if len(untrusted) > 0 {
				add(check{Name: "hooks trusted", Detail: "Codex will skip: " + strings.Join(untrusted, ", "), Fix: "cx ctl install"})
			} else {
				add(check{Name: "hooks trusted", OK: true, Detail: fmt.Sprintf("%d hooks trusted in %s", len(st.Installed), in.ConfigPath())})
			}
		}
		if err == nil && len(st.Missing) == 0 {
			add(a.doctorFire(dctx, in))
		}
	}
	if cfg.Home != "" {
		ledgerCheck, recovered := doctorLedger(dctx, cfg)
		add(ledgerCheck)
		add(doctorUnrecorded(cfg.Home, recovered))
	}
	if slices.Contains(cfg.Sinks, "openviking") {
		add(a.doctorOpenViking(dctx, cfg))
	}
	if in != nil {
		if c, found := doctorPlugin(cfg, filepath.Dir(in.HooksPath()), a.getenv); found {
			add(c)
		}
	}
	ok := true
	for _, c := range checks {
		ok = ok && c.OK
	}
	if asJSON {
		a.printJSON(map[string]any{"ok": ok, "checks": checks})
	} else {
		for _, c := range checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(a.stdout, "%s %-16s %s\n", mark, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(a.stdout, "     fix: %s\n", c.Fix)
			}
		}
	}
	if !ok {
		return 1
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "not listed"
	}
	return s
}

// doctorFire runs the installed SessionStart hook command the way Codex
// would, with a cx-doctor- session id the handler answers but never records.
func (a *app) doctorFire(ctx context.Context, in *hookcfg.Installer) check {
	payload, _ := json.Marshal(map[string]any{"session_id": lifecycle.DoctorPrefix + fmt.Sprint(time.Now().UnixNano()),
		"hook_event_name": "SessionStart", "source": "startup", "cwd": cwd(), "transcript_path": ""})
	cmd := shellCommand(ctx, hookcfg.Command(in.CXPath, "SessionStart"))
	cmd.Stdin = strings.NewReader(string(payload))
	start := time.Now()
	out, err := cmd.Output()
	took := time.Since(start)
	var v map[string]any
	if err != nil || json.Unmarshal(out, &v) != nil {
		return check{Name: "hooks firing", Detail: fmt.Sprintf("the SessionStart hook answered %q (%v)", out, err), Fix: "cx ctl install"}
	}
	return check{Name: "hooks firing", OK: true, Detail: fmt.Sprintf("SessionStart answered valid JSON in %v", took.Round(time.Millisecond))}
}

// doctorOpenViking checks the OpenViking server the sink talks to: that it
// answers, and that a session route takes cx's key and identity; it says
// where each setting came from.
func (a *app) doctorOpenViking(ctx context.Context, cfg config.Config) check {
	home, _ := a.getenv("HOME")
	o := cfg.OpenViking
	st, src := openviking.Resolve(openviking.Settings{URL: o.URL, Account: o.Account, User: o.User, Peer: o.Peer, Timeout: o.Timeout.Duration},
		o.APIKeyEnv, a.getenv, home)
	c := openviking.New(st)
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	h, err := c.Health(hctx)
	if err != nil {
		return check{Name: "openviking", Detail: fmt.Sprintf("%s (url from %s) does not answer: %v", st.URL, src["url"], err),
			Fix: "start the OpenViking server (or set [openviking] url); commits wait in the outbox meanwhile"}
	}
	server := fmt.Sprintf("%s healthy (server %s, auth %s)", st.URL, orUnknown(h.Version), orUnknown(h.AuthMode))
	settings := []string{"url from " + src["url"]}
	if st.APIKey != "" {
		settings = append(settings, "key from "+src["api_key"])
	}
	if st.Peer != "" {
		settings = append(settings, fmt.Sprintf("peer_id %q from %s", st.Peer, src["peer"]))
	}
	if (st.Account != "" || st.User != "") && h.AuthMode == "api_key" {
		settings = append(settings, "account/user not sent (an api_key server takes the identity from the key)")
	}
	_, err = c.Session(hctx, lifecycle.DoctorPrefix+"probe")
	var oe *openviking.Error
	switch {
	case err == nil, errors.Is(err, openviking.ErrNotFound):
		return check{Name: "openviking", OK: true, Detail: fmt.Sprintf("%s; a session route takes cx's identity; %s", server, strings.Join(settings, ", "))}
	case errors.As(err, &oe) && oe.Status == 403:
		return check{Name: "openviking", Detail: fmt.Sprintf("%s, but a session route refused the key: %v", server, err),
			Fix: "a ROOT key cannot write user sessions: use a user key (then `cx ctl retry --all`)"}
	case errors.As(err, &oe) && oe.Status == 401:
		return check{Name: "openviking", Detail: fmt.Sprintf("%s, but it refused the key (%s): %v", server, strings.Join(settings, ", "), err),
			Fix: fmt.Sprintf("set $%s (or api_key in ~/.openviking/ovcli.conf) to a key the server accepts, then `cx ctl retry --all`", o.APIKeyEnv)}
	case errors.As(err, &oe) && oe.Status == 400:
		return check{Name: "openviking", Detail: fmt.Sprintf("%s, but a session route refused cx's request: %v", server, err),
			Fix: "a trusted-mode server needs [openviking] account and user (or OPENVIKING_ACCOUNT / OPENVIKING_USER)"}
	}
	return check{Name: "openviking", Detail: fmt.Sprintf("%s: a session route failed: %v", server, err), Fix: "see the server's log"}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// doctorPlugin reports the OpenViking Codex plugin, which writes the same
// "cx-<id>" sessions as cx's openviking sink.
func doctorPlugin(cfg config.Config, codexHome string, getenv func(string) (string, bool)) (check, bool) {
	p := openviking.DetectPlugin(codexHome, getenv)
	if !p.Active() {
		return check{}, false
	}
	sinkOn := slices.Contains(cfg.Sinks, "openviking")
	where := strings.Join(p.Where, "; ")
	switch {
	case !sinkOn:
		return check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is active (" + where + "); cx's openviking sink is off, so each turn reaches OpenViking once, through the plugin"}, true
	case p.CaptureOff:
		return check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is installed (" + where + ") with OPENVIKING_AUTO_CAPTURE off: only cx writes the sessions"}, true
	case cfg.OpenViking.AllowWithPlugin:
		return check{Name: "ov plugin", OK: true, Detail: "the OpenViking Codex plugin is active (" + where + ") and [openviking] allow_with_plugin is set: both write the same cx-<id> session, each turn twice"}, true
	}
	return check{Name: "ov plugin", Detail: "the OpenViking Codex plugin is active (" + where + ") and writes the same cx-<id> sessions as cx's openviking sink; the sink is refused until you choose",
		Fix: openviking.PluginChoices}, true
}

// doctorUnrecorded reports runs that could not write the ledger (a full
// disk, an I/O error, a damaged or locked ledger), and what recovered them.
func doctorUnrecorded(home, recoveredNote string) check {
	crumbs := lifecycle.Unrecorded(home)
	if len(crumbs) > 0 {
		return check{Name: "unrecorded runs", Detail: fmt.Sprintf("%d run(s) since %s could not write the ledger; their sessions are safe in Codex's rollouts",
			len(crumbs), rfc3339(crumbs[0].Started)), Fix: "once the ledger can be written: cx ctl sweep (records and commits them; the next cx start does too)"}
	}
	detail := "every run was recorded"
	if recoveredNote != "" {
		detail += "; " + recoveredNote
	}
	return check{Name: "unrecorded runs", OK: true, Detail: detail}
}

// doctorLedger checks the ledger; it also says when sessions were last
// recorded late from their rollouts ("" if never).
func doctorLedger(ctx context.Context, cfg config.Config) (c check, recovered string) {
	db, err := ledger.Open(ctx, filepath.Join(cfg.Home, ledger.FileName), ledger.Options{})
	if err != nil {
		fix := "see " + filepath.Join(cfg.Home, "logs", "cx.log")
		if errors.Is(err, ledger.ErrDamaged) {
			fix = "move " + filepath.Join(cfg.Home, ledger.FileName) + " aside; cx starts a new ledger (rollouts keep every session)"
		}
		return check{Name: "ledger", Detail: err.Error(), Fix: fix}, ""
	}
	defer db.Close()
	if err := db.Check(ctx); err != nil {
		return check{Name: "ledger", Detail: err.Error(), Fix: "move the ledger aside"}, ""
	}
	if e, err := db.LastEvent(ctx, "rollouts.recovered"); err == nil {
		recovered = fmt.Sprintf("last on %s: %s recorded late from their rollouts", rfc3339(e.At), e.Detail)
	}
	pending, _ := db.Jobs(ctx, ledger.JobPending, ledger.JobLeased)
	parked, _ := db.Jobs(ctx, ledger.JobParked)
	c = check{Name: "ledger", OK: len(parked) == 0, Detail: fmt.Sprintf("%s: %d pending, %d parked job(s)", db.Path, len(pending), len(parked))}
	if len(parked) > 0 {
		c.Fix = "see `cx ctl status`, then `cx ctl retry --all`"
	}
	return c, recovered
}
