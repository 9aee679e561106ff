package main

import (
	"context"
	"cx/internal/proc"
	"cx/setup"
	"cx/supervisor"
	"errors"
	"os"
	"strconv"

	"cx/hookcfg"
	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/testpoint"
	"cx/lifecycle"
	"cx/wrapper"
)

// supervisorPIDVar marks the environment of the Codex cx starts with cx's
// pid. A cx whose parent is the cx named there was started *as* codex by
// that cx — a loop (e.g. another copy of cx named codex on PATH).
const supervisorPIDVar = "CX_SUPERVISOR_PID"

// startedBy reports whether the cx of pid (a decimal string) started this
// process: as its parent, or through its leader (the parent's parent).
func startedBy(pid string) bool {
	ppid := os.Getppid()
	if pid == strconv.Itoa(ppid) {
		return true
	}
	st, err := proc.ReadStat(ppid)
	return err == nil && pid == strconv.Itoa(st.PPID)
}

// ctrlC is the polite-stop keystroke for Codex: it handles no signal, but
// Ctrl+C interrupts a running turn and quits at an idle prompt, ending the
// session the way /exit does.
var ctrlC = []byte{0x03}

func (a *app) loadConfig() (config.Config, error) {
	cfg, err := config.Load(a.getenv)
	for _, w := range cfg.Warnings {
		a.errorf("warning: %s", w)
	}
	return cfg, err
}

// unrecordedWarning is the one line a run gets when cx's own state is in
// trouble: Codex runs as it would without cx, and nothing is recorded.
func (a *app) unrecordedWarning(err error) {
	a.errorf("warning: %v: this run's sessions are not recorded (their rollouts are intact; see `cx ctl doctor`)", err)
}

func (a *app) runCodex(ctx context.Context, args []string) int {
	if v, ok := a.getenv(supervisorPIDVar); ok && startedBy(v) {
		a.errorf("codex resolves to cx itself (loop): set CX_CODEX_BIN or [codex] bin to the real Codex")
		return 127
	}
	// cx never stands between the user and Codex: a CX_HOME or config cx
	// cannot use costs the recording, not the run.
	cfg, homeErr := a.loadConfig()
	if homeErr == nil {
		homeErr = config.EnsureHome(cfg.Home)
	}
	if homeErr != nil {
		cfg.Home = ""
	}
	bin, caps, err := setup.FindCodex(ctx, cfg, a.getenv)
	switch {
	case errors.Is(err, codex.ErrNotFound), errors.Is(err, codex.ErrIsSelf):
		a.errorf("%v", err)
		return 127
	case err != nil:
		// Unknown capabilities: run Codex with the user's arguments only.
		a.errorf("warning: %v", err)
	}
	spec := wrapper.Spec{
		Path:   bin.Path,
		Args:   codex.Args(args, caps),
		Stdin:  a.stdin,
		Stdout: a.stdout,
		Stderr: a.stderr,
		Stop:   wrapper.StopPolicy{Keys: ctrlC, Grace: cfg.Wrapper.Grace.Duration},
	}
	if self, err := os.Executable(); err == nil {
		spec.Leader = self // Ctrl+Z in Codex suspends it, and cx, as without cx
	}
	if v, _ := a.getenv(testpoint.NoLeader); v == "1" {
		spec.Leader = "" // the benchmark's "before": what the leader costs at start
	}
	if homeErr != nil {
		a.unrecordedWarning(homeErr)
		// cx's hooks answer this Codex with a no-op: there is nowhere to record.
		spec.Env = codex.Env(os.Environ(), bin, []string{supervisorPIDVar + "=" + strconv.Itoa(os.Getpid()), "CX_HOOKS_OFF=1"}, "CX_RUN_ID")
		ex, err := wrapper.Run(ctx, spec)
		a.reportRun(bin, ex, err)
		return ex.Code
	}

	codexArgs, note := inject.AtLaunch(ctx, cfg, codex.Home(a.getenv), cwd(), args, spec.Args, caps, func(ctx context.Context) (bool, string) {
		self, _ := hookcfg.Self()
		in := &hookcfg.Installer{CodexHome: codex.Home(a.getenv), CXPath: self, Trust: caps.HasHookTrust()}
		return in.Active(ctx)
	})
	if note != "" {
		a.errorf("%s", note)
	}
	spec.Args = codexArgs
	runID := lifecycle.NewRunID()
	var tap *supervisor.AppServerTap
	mode := ""
	if codex.IsAppServer(args, caps) {
		tap, mode = supervisor.NewAppServerTap(), lifecycle.ModeAppServer
	}
	sup := supervisor.Supervise(ctx, cfg, lifecycle.RunInfo{
		ID: runID, CodexHome: codex.Home(a.getenv), CodexVersion: caps.Version,
		Cwd: cwd(), CodexCwd: codex.Cwd(codexArgs, caps, cwd()), Args: codexArgs, Sinks: cfg.Sinks, Mode: mode,
	}, tap, a.errorf)
	// Codex's own recipe with cx's variables; cx's hooks always run for it.
	spec.Env = codex.Env(os.Environ(), bin, []string{"CX_HOME=" + cfg.Home, supervisorPIDVar + "=" + strconv.Itoa(os.Getpid()), "CX_RUN_ID=" + runID}, "CX_HOOKS_OFF")
	spec.Observer = sup
	if tap != nil {
		tap.Configure(&spec)
	}
	ex, err := wrapper.Run(ctx, spec)
	a.reportRun(bin, ex, err)
	// The terminal is restored: now the synthesized session end, bounded.
	sup.Finish(ctx, ex)
	return ex.Code
}

// reportRun says what went wrong around Codex's run; cx's own trouble
// never changes Codex's status.
func (a *app) reportRun(bin codex.Binary, ex wrapper.Exit, err error) {
	if ex.StartErr != nil {
		a.errorf("start codex %s: %v", bin.Path, ex.StartErr)
	}
	if err != nil {
		a.errorf("%v", err)
	}
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}
