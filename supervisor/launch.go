package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"cx/hookcfg"
	"cx/hookserver"
	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/testpoint"
	"cx/lifecycle"
	"cx/wrapper"
)

// Launch is what `cx [codex args…]` runs Codex with.
type Launch struct {
	Args                  []string // the user's, for Codex
	Cfg                   config.Config
	CfgErr                error // cx's config or CX_HOME cannot be used: Codex runs, unrecorded
	Stdin, Stdout, Stderr *os.File
	Getenv                func(string) (string, bool)
	Cwd                   string
	// Errorf writes one line for the user ("cx: …" on stderr).
	Errorf func(format string, args ...any)
	// OneP drops this process to one P once Codex is recorded (OneP).
	// Set by cx's main alone: in-process tests keep their cores.
	OneP bool
	// StartsHost starts CX_HOME's hook host beside Codex's launch when
	// none runs (hookserver.Prestart). Set by cx's main alone: an
	// in-process test's executable is not cx.
	StartsHost bool
}

// OneP leaves the process one P, unless GOMAXPROCS says otherwise. A run's
// cx (and an MCP server) mostly waits on Codex, woken by I/O and timers:
// with one P the scheduler does not spin looking for work between
// wake-ups (a run's wrapper CPU -20%, TestBenchExecRuns). A run keeps
// every core until Codex is recorded, which its first hooks wait for (with
// one P from the start, 16 sessions under cx: hook p99 223 against 196 ms).
// `cx ctl` (the hook host among them) keeps every core.
func OneP(getenv func(string) (string, bool)) {
	if _, set := getenv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
}

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

// RunCodex runs Codex under supervision and returns its exit status (127
// when there is no Codex to run, 126 when the one named cannot be run). cx never stands between the user and
// Codex: a CX_HOME or config cx cannot use costs the recording, not the
// run.
func RunCodex(ctx context.Context, l Launch) int {
	cfg, homeErr := l.Cfg, l.CfgErr
	if v, ok := l.Getenv(supervisorPIDVar); ok && startedBy(v) {
		l.Errorf("codex resolves to cx itself (loop): set CX_CODEX_BIN or [codex] bin to the real Codex")
		return 127
	}
	if homeErr == nil {
		homeErr = config.EnsureHome(cfg.Home)
	}
	if homeErr != nil {
		cfg.Home = ""
	}
	bin, caps, err := codex.FindFor(ctx, cfg.Codex.Bin, cfg.Home, l.Getenv)
	switch {
	case errors.Is(err, codex.ErrNotExecutable):
		l.Errorf("%v", err)
		return 126
	case errors.Is(err, codex.ErrNotFound), errors.Is(err, codex.ErrIsSelf):
		l.Errorf("%v", err)
		return 127
	case err != nil:
		// Unknown capabilities: run Codex with the user's arguments only.
		l.Errorf("warning: %v", err)
	}
	spec := wrapper.Spec{
		Path:   bin.Path,
		Args:   codex.Args(l.Args, caps),
		Stdin:  l.Stdin,
		Stdout: l.Stdout,
		Stderr: l.Stderr,
		Stop:   wrapper.StopPolicy{Keys: ctrlC, Grace: cfg.Wrapper.Grace.Duration},
	}
	if self, err := os.Executable(); err == nil {
		spec.Leader = self // Ctrl+Z in Codex suspends it, and cx, as without cx
	}
	if v, _ := l.Getenv(testpoint.NoLeader); v == "1" {
		spec.Leader = "" // the benchmark's "before": what the leader costs at start
	}
	if homeErr != nil {
		unrecordedWarning(l, homeErr)
		// cx's hooks answer this Codex with a no-op: there is nowhere to record.
		spec.Env = codex.Env(os.Environ(), bin, []string{supervisorPIDVar + "=" + strconv.Itoa(os.Getpid()), "CX_HOOKS_OFF=1"}, "CX_RUN_ID")
		ex, err := wrapper.Run(ctx, spec)
		reportRun(l, bin, ex, err)
		return ex.Code
	}

	// Whether cx's hooks run in this Codex (the installer's answer, and why
	// not): asked only where the answer is used.
	hooksActive := func(ctx context.Context) (bool, string) {
		self, _ := hookcfg.Self()
		in := &hookcfg.Installer{CodexHome: codex.Home(l.Getenv), CXPath: self, Trust: caps.HasHookTrust()}
		return in.Active(ctx)
	}
	codexArgs, note := inject.AtLaunch(ctx, cfg, readLedger(cfg.Home), codex.Home(l.Getenv), l.Cwd, l.Args, spec.Args, caps, hooksActive)
	if note != "" {
		l.Errorf("%s", note)
	}
	spec.Args = codexArgs
	runID := newRunID()
	var tap *AppServerTap
	mode := ""
	if codex.IsAppServer(l.Args, caps) {
		tap, mode = NewAppServerTap(), lifecycle.ModeAppServer
	}
	sup := Supervise(ctx, cfg, lifecycle.RunInfo{
		ID: runID, CodexHome: codex.Home(l.Getenv), CodexVersion: caps.Version,
		Cwd: l.Cwd, CodexCwd: codex.Cwd(codexArgs, caps, l.Cwd), Args: codexArgs, Sinks: cfg.Sinks, Mode: mode,
		Attributed: func() {
			if l.OneP {
				OneP(l.Getenv)
			}
		},
	}, tap, l.Errorf)
	if l.StartsHost && (codex.StartsSession(l.Args, caps) || mode == lifecycle.ModeAppServer) {
		sup.AfterLaunch("start the hook host", func() {
			hookserver.Prestart(cfg.Home, os.Environ(), func() bool {
				ok, _ := hooksActive(ctx)
				return ok
			})
		})
	}
	// Codex's own recipe with cx's variables; cx's hooks always run for it.
	spec.Env = codex.Env(os.Environ(), bin, []string{"CX_HOME=" + cfg.Home, supervisorPIDVar + "=" + strconv.Itoa(os.Getpid()), "CX_RUN_ID=" + runID}, "CX_HOOKS_OFF")
	spec.Observer = sup
	if tap != nil {
		tap.Configure(&spec)
	}
	late := catchLateSignals()
	defer late.stop()
	ex, err := wrapper.Run(ctx, spec)
	late.arm()
	reportRun(l, bin, ex, err)
	// The terminal is restored: now the synthesized session end, bounded.
	sup.Finish(ctx, ex, late.cut)
	return ex.Code
}

// lateSignals are the stop signals that reach cx once Codex has exited,
// while it records the sessions' ends and works the outbox. Uncaught,
// one killed cx there and left the sink command it had started running
// (done again later by the next worker). The first closes cut: the
// outbox work stops, its command killed and waited for, and cx exits
// once the ends are recorded. A second is obeyed at once.
type lateSignals struct {
	ch  chan os.Signal
	cut chan struct{}
}

// catchLateSignals subscribes before Codex starts, so that no moment
// between the wrapper's own handling and the finish is left to the
// default action.
func catchLateSignals() *lateSignals {
	l := &lateSignals{ch: make(chan os.Signal, 8), cut: make(chan struct{})}
	signal.Notify(l.ch, wrapper.StopSignals...)
	return l
}

// arm starts acting on signals from now on: those caught while Codex ran
// were the wrapper's to act on.
func (l *lateSignals) arm() {
	for len(l.ch) > 0 {
		<-l.ch
	}
	go func() {
		<-l.ch
		close(l.cut)
		sig := (<-l.ch).(syscall.Signal)
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
	}()
}

func (l *lateSignals) stop() { signal.Stop(l.ch) }

// unrecordedWarning is the one line a run gets when cx's own state is in
// trouble: Codex runs as it would without cx, and nothing is recorded.
func unrecordedWarning(l Launch, err error) {
	l.Errorf("warning: %v: this run's sessions are not recorded (their rollouts are intact; see `cx ctl doctor`)", err)
}

// reportRun says what went wrong around Codex's run; cx's own trouble
// never changes Codex's status.
func reportRun(l Launch, bin codex.Binary, ex wrapper.Exit, err error) {
	if ex.StartErr != nil {
		l.Errorf("start codex %s: %v", bin.Path, ex.StartErr)
	}
	if err != nil {
		l.Errorf("%v", err)
	}
}

// newRunID returns a fresh run id.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}

// readLedger opens the ledger in home to read, for the block given at
// launch when hooks cannot give it: nil when it cannot be read.
func readLedger(home string) func(context.Context) (inject.Ledger, func()) {
	return func(ctx context.Context) (inject.Ledger, func()) {
		db, err := ledger.Open(ctx, home, ledger.Reader, ledger.Options{})
		if err != nil {
			return nil, func() {}
		}
		return db, func() { db.Close() }
	}
}
