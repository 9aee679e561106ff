package lifecycle_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/hookcfg"
	"cx/internal/codex"
	"cx/internal/crumbs"
	"cx/internal/fsutil"
	"cx/internal/health"
	"cx/internal/hookwire"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/readmodel"
	"cx/internal/testing/codextest"
	"cx/lifecycle"
)

func TestMain(m *testing.M) {
	if os.Getenv("FAKE_CODEX") == "1" {
		os.Exit(fakeCodexMain())
	}
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

// env is one isolated CODEX_HOME + CX_HOME with cx's hooks installed.
type env struct {
	t                    testing.TB
	codexHome, cxHome, w string
	cx                   string
	extra                []string
}

var hookEvents = []string{"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact", "SessionEnd", "Interrupt"}

func newEnv(t testing.TB, extra ...string) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, codexHome: filepath.Join(root, "codex"), cxHome: filepath.Join(root, "cx"), w: filepath.Join(root, "work"), cx: codextest.CX(t), extra: extra}
	for _, d := range []string{e.codexHome, e.w} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeHooks(t, e)
	// The hook host a hook started leaves before its CX_HOME is removed.
	t.Cleanup(func() { hookwire.StopHost(e.cxHome, 10*time.Second) })
	return e
}

// holdSweeper takes the background sweeper's place, so none runs until
// unlock: the hook host the hooks so far started leaves first. It makes
// CX_HOME when no run has yet.
func (e *env) holdSweeper() (unlock func(), err error) {
	hookwire.StopHost(e.cxHome, 10*time.Second)
	if err := os.MkdirAll(e.cxHome, 0o700); err != nil {
		return nil, err
	}
	return fsutil.Lock(filepath.Join(e.cxHome, "sweep.lock"), false)
}

// writeHooks writes e's Codex home's hooks.json: every event to e.cx, as
// cx ctl install writes it (its hook client when there is one beside it).
func writeHooks(t testing.TB, e *env) {
	t.Helper()
	writeHookCommands(t, e, func(ev string) string { return hookcfg.Command(e.cx, ev) })
}

// writeHookCommand writes e's Codex home's hooks.json with command for
// every event, in cx's place.
func writeHookCommand(t testing.TB, e *env, command string) {
	t.Helper()
	writeHookCommands(t, e, func(string) string { return command })
}

func writeHookCommands(t testing.TB, e *env, command func(event string) string) {
	t.Helper()
	hooks := map[string]any{}
	for _, ev := range hookEvents {
		hooks[ev] = []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command(ev), "timeout": 30}}}}
	}
	data, _ := json.Marshal(map[string]any{"hooks": hooks})
	if err := os.WriteFile(filepath.Join(e.codexHome, "hooks.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *env) environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CX_") || k == "CODEX_HOME" || k == "FAKE_SCRIPT" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "CODEX_HOME="+e.codexHome, "CX_HOME="+e.cxHome, "FAKE_CODEX=1", "CX_CODEX_BIN="+os.Args[0],
		"CX_TEST_OFF=pdeathsig") // the lifeline alone guards against orphans, as on macOS
	env = append(env, e.extra...)
	return append(env, extra...)
}

// cxCmd is `cx` running the fake Codex with script (steps, ";"-separated).
func (e *env) cxCmd(script string, extra ...string) *exec.Cmd {
	cmd := exec.Command(e.cx)
	cmd.Dir = e.w
	cmd.Env = e.environ(append(extra, "FAKE_SCRIPT="+strings.ReplaceAll(script, ";", "\n"))...)
	return cmd
}

// run runs cx over the script to the end and returns its exit status.
func (e *env) run(script string, extra ...string) int {
	e.t.Helper()
	cmd := e.cxCmd(script, extra...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := runTimeout(cmd, 60*time.Second); err != nil && cmd.ProcessState == nil {
		e.t.Fatalf("cx: %v\n%s", err, errb.String())
	}
	if strings.Contains(errb.String(), "fake codex: hook") {
		e.t.Fatalf("a hook failed: %s", errb.String())
	}
	return cmd.ProcessState.ExitCode()
}

func runTimeout(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("timed out after %v", d)
	}
}

// ctl runs `cx ctl args…`.
func (e *env) ctl(args ...string) (string, int) {
	e.t.Helper()
	return e.ctlLater(0, args...)
}

// ctlLater runs `cx ctl` with cx's clock set ahead by d (a lease expired, a
// session idle past its TTL, a rollout past active_window), where a test
// would otherwise sleep.
func (e *env) ctlLater(d time.Duration, args ...string) (string, int) {
	e.t.Helper()
	cmd := exec.Command(e.cx, append([]string{"ctl"}, args...)...)
	cmd.Dir = e.w
	cmd.Env = e.environ()
	if d > 0 {
		cmd.Env = append(cmd.Env, "CX_TEST_CLOCK="+d.String())
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := runTimeout(cmd, 60*time.Second); err != nil && cmd.ProcessState == nil {
		e.t.Fatalf("cx ctl %v: %v", args, err)
	}
	if cmd.ProcessState.ExitCode() != 0 {
		return out.String() + errb.String(), cmd.ProcessState.ExitCode()
	}
	return out.String(), 0
}

// hook runs `cx ctl hook` directly with a payload (Codex started without cx).
func (e *env) hook(event string, payload map[string]any, extra ...string) (string, time.Duration) {
	e.t.Helper()
	return e.hookUnder(nil, event, payload, extra...)
}

// hookUnder is hook run as the child of a process of its own (parent, a
// command that runs the rest: another Codex, to the hook).
func (e *env) hookUnder(parent []string, event string, payload map[string]any, extra ...string) (string, time.Duration) {
	e.t.Helper()
	argv := append(append(slices.Clone(parent), e.cx), "ctl", "hook", event)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = e.w
	cmd.Env = e.environ(extra...)
	b, _ := json.Marshal(payload)
	cmd.Stdin = bytes.NewReader(b)
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := runTimeout(cmd, 30*time.Second); err != nil {
		e.t.Fatalf("hook %s: %v", event, err)
	}
	return out.String(), time.Since(start)
}

type sessionState = readmodel.SessionView

func (e *env) sessions() map[string]sessionState {
	e.t.Helper()
	out, code := e.ctl("sessions", "--json")
	if code != 0 {
		e.t.Fatalf("sessions: %s", out)
	}
	var list []sessionState
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		e.t.Fatalf("sessions --json: %v\n%s", err, out)
	}
	m := map[string]sessionState{}
	for _, s := range list {
		m[s.ID] = s
	}
	return m
}

// want checks one session's state.
func (e *env) want(id, status, reason string, gen, commits int) sessionState {
	e.t.Helper()
	var st sessionState
	var ok bool
	// A background sweeper started by a hook may still be finishing a job.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, ok = e.sessions()[id]
		if (ok && st.Status == status && st.EndReason == reason && st.Generation == gen && st.Commits == commits) || time.Now().After(deadline) {
			break
		}
	}
	if !ok {
		e.t.Fatalf("session %s unknown to cx", id)
	}
	if st.Status != status || st.EndReason != reason || st.Generation != gen || st.Commits != commits {
		out, _ := e.ctl("show", id)
		e.t.Fatalf("session %s: %+v\nwant status %s, reason %q, generation %d, commits %d\n%s", id, st, status, reason, gen, commits, out)
	}
	return st
}

// db opens the ledger directly for assertions the commands do not show.
func (e *env) db() *ledger.DB {
	e.t.Helper()
	db, err := ledger.Open(context.Background(), e.cxHome, ledger.Writer, ledger.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	return db
}

// doneJobs counts completed commit jobs of a session.
func (e *env) doneJobs(id string) int {
	e.t.Helper()
	jobs, err := e.db().Jobs(context.Background(), ledger.JobDone)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, j := range jobs {
		if j.SessionID == id {
			n++
		}
	}
	return n
}

func TestGracefulExitNativeSessionEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if code := e.run("start A; hook SessionStart A startup; turn A fix the parser; hook SessionEnd A; exit 0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	e.want("A", "committed", "session_end", 1, 1)
	if n := e.doneJobs("A"); n != 1 {
		t.Fatalf("%d commit jobs done, want 1 (the wrapper's end must be a no-op)", n)
	}
}

func TestExitWithoutSessionEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A one; turn A two; exit 3")
	st := e.want("A", "committed", "exit", 1, 1)
	if st.TotalTurns != 2 {
		t.Fatalf("turns %d, want 2", st.TotalTurns)
	}
}

func TestNewAndClearEndPreviousForeground(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"startup", "clear"} {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.run("start A; hook SessionStart A startup; turn A first; start B; hook SessionStart B " + src + "; turn B second; exit 0")
			reason := map[string]string{"startup": "new", "clear": "clear"}[src]
			e.want("A", "committed", reason, 1, 1)
			e.want("B", "committed", "exit", 1, 1)
		})
	}
}

// 0.169 keeps the old thread loaded and sends its SessionEnd at exit: with
// nothing new that is a no-op; after a switch back, the new turns are the
// next generation.
func TestSwitchBackAfterNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; start B; hook SessionStart B startup; turn B other; hook SessionEnd B; hook SessionEnd A; exit 0")
	e.want("A", "committed", "new", 1, 1)
	e.want("B", "committed", "session_end", 1, 1)

	e2 := newEnv(t)
	e2.run("start A; hook SessionStart A startup; turn A first; start B; hook SessionStart B startup; turn B other; turn A back again; hook SessionEnd A; hook SessionEnd B; exit 0")
	e2.want("A", "committed", "session_end", 2, 2)
	e2.want("B", "committed", "session_end", 1, 1)
}

// Sessions are learned from the Codex process before any hook: a session
// with no turn is closed as empty, with no commit.
func TestDiscoveredSessionWithoutTurnIsEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; sleep 1200; exit 0")
	e.want("A", "empty", "exit", 1, 0)
	if n := e.doneJobs("A"); n != 0 {
		t.Fatalf("an empty session was committed (%d jobs)", n)
	}
}

func TestResumeNeverEndsAnything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	// A second run: B is foreground, then A is resumed in the same process.
	e.run("start B; hook SessionStart B startup; turn B bee; start A; hook SessionStart A resume; turn A resumed; exit 0")
	e.want("B", "committed", "exit", 1, 1) // not "new": resume ends nothing
	e.want("A", "committed", "exit", 2, 2)
	// A resume without a turn leaves the session as it was.
	e.run("start A; hook SessionStart A resume; exit 0")
	e.want("A", "committed", "exit", 2, 2)
}

func TestPreCompactSplitsGenerations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A before; compact A; hook SessionStart A compact; turn A after; exit 0")
	e.want("A", "committed", "exit", 2, 2)
	gens, err := e.db().Generations(context.Background(), "A")
	if err != nil || len(gens) != 2 || gens[0].EndReason != "compact" || gens[0].Turns != 1 || gens[1].Turns != 1 {
		t.Fatalf("generations %+v (%v)", gens, err)
	}
}

// A compaction, then the terminal closed before another turn: the empty
// generation never happened, and the session shows its last end — the
// hangup — not the compaction.
func TestCompactThenHangupShowsTheHangup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A before; compact A; hook SessionStart A compact; die 1")
	e.want("A", "committed", "killed:HUP", 1, 1)
	gens, err := e.db().Generations(context.Background(), "A")
	if err != nil || len(gens) != 1 || gens[0].EndReason != "compact" {
		t.Fatalf("generations %+v (%v)", gens, err)
	}
}

func TestChildKilledAndSignalledCX(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if code := e.run("start A; hook SessionStart A startup; turn A work; die 9"); code != 137 {
		t.Fatalf("exit %d, want 137", code)
	}
	e.want("A", "committed", "killed:KILL", 1, 1)

	// SIGTERM to cx (pipe mode): forwarded; Codex dies of it.
	e2 := newEnv(t)
	cmd := e2.cxCmd("start A; hook SessionStart A startup; turn A work; wait")
	cmd.Stdin = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "turn recorded", func() bool { s, ok := e2.sessions()["A"]; return ok && s.Turns == 1 })
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = runWait(cmd, 30*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Fatalf("exit %d, want 143", code)
	}
	e2.want("A", "committed", "signal:TERM", 1, 1)
}

func runWait(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return <-done
	}
}

// waitLog waits until cx.log has a line with substr.
func (e *env) waitLog(substr string) {
	e.t.Helper()
	waitFor(e.t, "cx.log to say "+substr, func() bool {
		log, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
		return strings.Contains(string(log), substr)
	})
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A cx SIGKILLed: its Codex goes too; the session is ended as an orphan by
// the next sweep (or cx start, or hook), once.
func TestOrphanRecovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A work; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "turn recorded", func() bool { s, ok := e.sessions()["A"]; return ok && s.Turns == 1 })
	runs, err := e.db().Runs(context.Background(), true)
	if err != nil || len(runs) != 1 || runs[0].CodexPID == 0 {
		t.Fatalf("live runs %+v, %v", runs, err)
	}
	codextest.AwaitWatchman(t, cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = runWait(cmd, 10*time.Second)
	waitFor(t, "Codex gone with its cx", func() bool { return !proc.Alive(runs[0].CodexPID, runs[0].CodexStart) })
	e.want("A", "live", "", 1, 0)
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %s", out)
	}
	e.want("A", "committed", "orphan", 1, 1)
	e.ctl("sweep")
	e.want("A", "committed", "orphan", 1, 1)
}

// A run that starts while another process holds the ledger past the busy
// timeout (or the disk is full) records itself once it can, not never: its
// cx killed afterwards, the sweep ends its thread as an orphan. It tried
// once, so a daemon started on a full disk ran for minutes under an id the
// ledger did not know, its hooks recorded its threads as no run's, and
// once it was killed nothing ended them (the chaos run, seed 778, 0.128:
// not quiet 3 minutes after healing).
func TestRunRecordedAfterLockedStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.db().Close() // the ledger exists, to be held
	release, err := codextest.HoldLedger(e.cxHome)
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.cxCmd("sleep 6000; start A; hook SessionStart A startup; turn A work; wait")
	if err := cmd.Start(); err != nil {
		release()
		t.Fatal(err)
	}
	t.Cleanup(func() { // a failed test leaves no cx waiting for good
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = runWait(cmd, 10*time.Second)
		}
	})
	// Held until the fake Codex, which waits 6 s before it starts its
	// thread, has written its rollout: the run's open and first try to
	// record itself (2 s busy each at most) have failed by then.
	e.oneRollout()
	release()
	waitFor(t, "turn recorded", func() bool { s, ok := e.sessions()["A"]; return ok && s.Turns == 1 })
	var run ledger.Run
	waitFor(t, "the run recorded, with its Codex", func() bool {
		runs, err := e.db().Runs(context.Background(), true)
		if err == nil && len(runs) == 1 && runs[0].CodexPID != 0 {
			run = runs[0]
		}
		return run.ID != ""
	})
	codextest.AwaitWatchman(t, cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = runWait(cmd, 10*time.Second)
	waitFor(t, "Codex gone with its cx", func() bool { return !proc.Alive(run.CodexPID, run.CodexStart) })
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %s", out)
	}
	e.want("A", "committed", "orphan", 1, 1)
}

// A cx killed before it learned its thread, whose hooks recorded nothing
// (a hook killed) or recorded it without knowing its run (attribution out
// of time on a locked ledger): the sweep that finds the run dead learns
// the thread from Codex's files, as the run's exit would have, and ends it
// with the run. Found by the 20-minute chaos run (Codex 0.169: 3 threads
// of 251 never recorded) and a TUI chaos run (0.128: a thread left live).
func TestOrphanRunsUnlearnedThreadRecovered(t *testing.T) {
	t.Parallel()
	for _, hooked := range []bool{false, true} {
		t.Run(fmt.Sprintf("recorded by a hook without its run: %v", hooked), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cmd := e.cxCmd("steady; quiet on; start $V7; turn $V7 words never recorded; wait", "CX_TEST_CRASH_AT=learn", "FAKE_TODAY=1")
			_ = runTimeout(cmd, 30*time.Second)
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("cx did not crash as it learned the thread: %v", cmd.ProcessState)
			}
			rollout := e.oneRollout()
			id := codex.RolloutID(filepath.Base(rollout))
			if _, known := e.sessions()[id]; known {
				t.Fatal("the thread was recorded before the crash")
			}
			runs, err := e.db().Runs(context.Background(), true)
			if err != nil || len(runs) != 1 || runs[0].CodexPID == 0 {
				t.Fatalf("live runs %+v, %v", runs, err)
			}
			if hooked {
				// The hook records it without a run. Its own orphan recovery
				// leaves the run while its Codex runs, or (the watchman was
				// quicker) finds both gone and already gives it to the run.
				e.hook("UserPromptSubmit", map[string]any{"session_id": id, "hook_event_name": "UserPromptSubmit", "transcript_path": rollout, "cwd": e.w})
				if st := e.sessions()[id]; (st.RunID != "" || st.Status != "live") && st.RunID != runs[0].ID {
					t.Fatalf("the hook recorded %+v", st)
				}
			}
			// Its Codex goes the way a dead cx's does (the watchman, or the
			// parent-death signal, both later than this crash or off in tests).
			_ = syscall.Kill(runs[0].CodexPID, syscall.SIGTERM)
			waitFor(t, "the thread's Codex gone", func() bool {
				return !codex.ThreadLocked(e.codexHome, id) && !proc.Alive(runs[0].CodexPID, runs[0].CodexStart)
			})
			if out, code := e.ctl("sweep"); code != 0 {
				t.Fatalf("sweep: %s", out)
			}
			e.want(id, "committed", "orphan", 1, 1)
		})
	}
}

// A dead run's Codex whose thread lock the kernel has not let go yet (it
// may outlast the process a moment; here a child holds it for 20 s, and
// /proc/locks still names the Codex): the sweep that finds the run dead
// learns the thread as the run's and ends it, rather than leave it to no
// one as another Codex's. Under load the hooked case above met this window
// (1 run in 20, and 4 threads in a 20-minute chaos run).
func TestOrphanRunsLockLetGoLate(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the lock's holder is read from /proc/locks")
	}
	// The scene needs the fake Codex to run its script whole before the
	// stop that follows cx's crash turns into a SIGKILL: on a machine too
	// busy for that, it is set again (at most 3 times).
	for attempt := 1; ; attempt++ {
		e := newEnv(t)
		cmd := e.cxCmd("steady; quiet on; start $V7; turn $V7 words never recorded; linger 20000; wait", "CX_TEST_CRASH_AT=learn", "FAKE_TODAY=1")
		_ = runTimeout(cmd, 30*time.Second)
		id := codex.RolloutID(filepath.Base(e.oneRollout()))
		runs, err := e.db().Runs(context.Background(), true)
		if err != nil || len(runs) != 1 || runs[0].CodexPID == 0 {
			t.Fatalf("live runs %+v, %v", runs, err)
		}
		_ = syscall.Kill(runs[0].CodexPID, syscall.SIGTERM)
		waitFor(t, "the thread's Codex gone", func() bool { return !proc.Alive(runs[0].CodexPID, runs[0].CodexStart) })
		if !flocked(t, filepath.Join(e.codexHome, "thread-writer-locks", id+".lock")) {
			if attempt < 3 {
				t.Logf("attempt %d: the fake Codex was stopped before it lingered: again", attempt)
				continue
			}
			t.Fatalf("the exited Codex's lock is let go already, %d times", attempt)
		}
		if out, code := e.ctl("sweep"); code != 0 {
			t.Fatalf("sweep: %s", out)
		}
		e.want(id, "committed", "orphan", 1, 1)
		return
	}
}

// A thread Codex starts while another process holds the ledger past the
// busy timeout: discovery's try to record it fails, and the run records it
// at a later look. (It counted the thread learned on the failed try, so
// neither a later look nor the exit recorded it, and no hook ever would on
// a turn without hooks: found by the 20-minute chaos run, 0.128.)
func TestDiscoveryOutlastsLockedLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("quiet on; sleep 1500; start $V7; turn $V7 words held back; sleep 6000; exit 0", "FAKE_TODAY=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db := e.db()
	waitFor(t, "the run's Codex recorded", func() bool {
		runs, err := db.Runs(context.Background(), true)
		return err == nil && len(runs) == 1 && runs[0].CodexPID != 0
	})
	release, err := codextest.HoldLedger(e.cxHome)
	if err != nil {
		t.Fatal(err)
	}
	// Held until discovery, having found the thread, failed to record it.
	e.waitLog("discover session")
	release()
	if err := runWait(cmd, 30*time.Second); err != nil {
		t.Fatalf("cx: %v", err)
	}
	id := codex.RolloutID(filepath.Base(e.oneRollout()))
	e.want(id, "committed", "exit", 1, 1)
}

// Hooks that come before the run could record Codex's pid (the ledger
// busy past its timeout) are the run's all the same: their Codex is the
// child of the run's cx (or of its session leader, in a terminal), and a
// nested Codex's hooks are still not. They were
// recorded as no run's, and a thread discovery did not see (here: it
// panicked) was left live at the run's exit.
func TestHookAttributedBeforeCodexRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("sleep 1500; start $V7; hook SessionStart $V7 startup; turn $V7 words; nested N; exit 0", "FAKE_TODAY=1", "CX_TEST_PANIC_AT=discover")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db := e.db()
	ctx := context.Background()
	var runID string
	waitFor(t, "the run's Codex recorded", func() bool {
		runs, err := db.Runs(ctx, true)
		if err == nil && len(runs) == 1 && runs[0].CodexPID != 0 {
			runID = runs[0].ID
		}
		return runID != ""
	})
	err := db.Tx(ctx, func(tx *ledger.Tx) error { // as if its write had failed
		run, err := tx.Run(ctx, runID)
		if err != nil {
			return err
		}
		run.CodexPID, run.CodexStart = 0, 0
		return tx.PutRun(ctx, run)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := runWait(cmd, 30*time.Second); err != nil {
		t.Fatalf("cx: %v", err)
	}
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	id := ""
	for _, p := range rollouts {
		if rid := codex.RolloutID(filepath.Base(p)); rid != "N" {
			id = rid
		}
	}
	if st := e.want(id, "committed", "exit", 1, 1); st.RunID != runID {
		t.Fatalf("session of run %q, want %s", st.RunID, runID)
	}
	if st := e.sessions()["N"]; st.RunID != "" {
		t.Fatalf("a nested Codex's session attributed to run %s", st.RunID)
	}
}

// flocked reports whether some process holds path's flock(2) lock (tried,
// and given back at once when free).
func flocked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// oneRollout waits for the one rollout the env's Codex writes (cx may die
// before Codex has written it) and returns its path.
func (e *env) oneRollout() string {
	e.t.Helper()
	var rollouts []string
	waitFor(e.t, "one rollout", func() bool {
		rollouts, _ = filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
		return len(rollouts) == 1
	})
	return rollouts[0]
}

// A Codex started by the model inside a cx session inherits CX_RUN_ID but is
// another process: its sessions never end the outer run's foreground.
func TestNestedCodexIsNotTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A outer; nested N; turn A still outer; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	st := e.sessions()["N"]
	if st.RunID != "" {
		t.Fatalf("nested session attributed to run %s", st.RunID)
	}
}

// A hook carrying a run's CX_RUN_ID from a process that is not its Codex
// (a shared daemon with another process's environment) is not that run's.
func TestForeignRunIDIsNotAttributed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A work; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, "turn", func() bool { s, ok := e.sessions()["A"]; return ok && s.Turns == 1 })
	runID := e.sessions()["A"].RunID
	e.hook("SessionStart", map[string]any{"session_id": "X", "hook_event_name": "SessionStart", "source": "startup", "cwd": e.w}, "CX_RUN_ID="+runID)
	if st := e.sessions()["A"]; st.Status != "live" {
		t.Fatalf("a foreign SessionStart ended the run's session: %+v", st)
	}
	if st := e.sessions()["X"]; st.RunID != "" {
		t.Fatalf("foreign session attributed: %+v", st)
	}
}

// Without cx (no CX_RUN_ID): exactly one other un-owned session of the
// same Codex process, active in the window, is ended; with two, neither;
// another Codex's, never.
func TestActiveWindowFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := func(id string) {
		e.hook("SessionStart", map[string]any{"session_id": id, "hook_event_name": "SessionStart", "source": "startup", "cwd": e.w})
	}
	start("P")
	start("Q")
	if st := e.sessions()["P"]; st.Status != "empty" || st.EndReason != "new" {
		t.Fatalf("P: %+v, want ended by Q's start", st)
	}
	start("R") // Q is the only other live one
	e.want("Q", "empty", "new", 1, 0)
	// Two Codex side by side (each hook the child of its own process):
	// one's start never ends the other's session.
	e3 := newEnv(t)
	for _, id := range []string{"W1", "W2"} {
		e3.hookUnder([]string{"timeout", "30"}, "SessionStart", map[string]any{"session_id": id, "hook_event_name": "SessionStart", "source": "startup", "cwd": e3.w})
	}
	if st := e3.sessions()["W1"]; st.Status != "live" {
		t.Fatalf("W1 ended by another Codex's start: %+v", st)
	}
	e2 := newEnv(t)
	for _, id := range []string{"S1", "S2"} {
		e2.hook("UserPromptSubmit", map[string]any{"session_id": id, "hook_event_name": "UserPromptSubmit", "cwd": e2.w})
	}
	e2.hook("SessionStart", map[string]any{"session_id": "S3", "hook_event_name": "SessionStart", "source": "startup", "cwd": e2.w})
	for _, id := range []string{"S1", "S2"} {
		if st := e2.sessions()[id]; st.Status != "live" {
			t.Fatalf("%s ended with two candidates: %+v", id, st)
		}
	}
}

func TestIdleTTLSweep(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[lifecycle]\nidle_ttl = \"1s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, "CX_CONFIG="+cfg)
	e.hook("UserPromptSubmit", map[string]any{"session_id": "I", "hook_event_name": "UserPromptSubmit", "cwd": e.w})
	e.ctl("sweep")
	if st := e.sessions()["I"]; st.Status != "live" {
		t.Fatalf("ended before the TTL: %+v", st)
	}
	e.ctlLater(2*time.Second, "sweep") // past the TTL
	e.want("I", "empty", "idle", 1, 0)
}

func TestSinksNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "CX_SINKS=none")
	e.run("start A; hook SessionStart A startup; turn A work; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	if n := e.doneJobs("A"); n != 0 {
		t.Fatalf("CX_SINKS=none made %d jobs", n)
	}
}

func TestHooksOffAndDoctorIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, _ := e.hook("SessionStart", map[string]any{"session_id": "OFF", "hook_event_name": "SessionStart", "source": "startup"}, "CX_HOOKS_OFF=1")
	if strings.TrimSpace(out) != "{}" {
		t.Fatalf("answer %q", out)
	}
	e.hook("SessionStart", map[string]any{"session_id": health.DoctorPrefix + "1", "hook_event_name": "SessionStart", "source": "startup"})
	if len(e.sessions()) != 0 {
		t.Fatalf("recorded: %+v", e.sessions())
	}
}

// Bad input: a clear log line and a valid no-op answer, exit 0.
func TestBadHookInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := map[string]string{
		"malformed":  `{"session_id": "x", `,
		"empty":      ``,
		"not object": `[1,2]`,
		"unknown":    `{"session_id":"x","hook_event_name":"Teleport"}`,
		"no session": `{"hook_event_name":"Stop"}`,
	}
	for name, in := range cases {
		cmd := exec.Command(e.cx, "ctl", "hook", "Stop")
		cmd.Env = e.environ()
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != "{}" {
			t.Errorf("%s: answer %q err %v", name, out, err)
		}
	}
	log, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
	for _, want := range []string{"not JSON", "empty hook input", `unknown hook event "Teleport"`, "no session_id"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("cx.log lacks %q:\n%s", want, log)
		}
	}
	if len(e.sessions()) != 0 {
		t.Fatalf("bad input recorded sessions: %+v", e.sessions())
	}
}

// Eight processes ending the same session at once: one commit.
func TestConcurrentEnders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A work; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, "turn", func() bool { s, ok := e.sessions()["A"]; return ok && s.Turns == 1 })
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				c := exec.Command(e.cx, "ctl", "commit", "A")
				c.Env = e.environ()
				_ = runTimeout(c, 60*time.Second)
			} else {
				c := exec.Command(e.cx, "ctl", "hook", "SessionEnd")
				c.Env = e.environ()
				c.Stdin = strings.NewReader(`{"session_id":"A","hook_event_name":"SessionEnd","reason":"other"}`)
				_ = runTimeout(c, 60*time.Second)
			}
		}(i)
	}
	wg.Wait()
	e.ctl("sweep")
	st := e.sessions()["A"]
	if st.Status != "committed" || st.Commits != 1 || st.Generation != 1 {
		t.Fatalf("after 8 enders: %+v", st)
	}
	if n := e.doneJobs("A"); n != 1 {
		t.Fatalf("%d commit jobs done, want 1", n)
	}
}

// The ledger locked by another process for longer than a hook's budget: the
// hook still answers in time, and the turn is committed later from the rollout.
func TestLockedLedgerHookAnswersInTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	// A second turn lands in the rollout while the ledger is locked.
	raw, err := sql.Open("sqlite", ledger.Path(e.cxHome))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	rollout, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	appendTurn(t, rollout[0], "A", "second while locked")
	_, took := e.hook("SessionEnd", map[string]any{"session_id": "A", "hook_event_name": "SessionEnd", "transcript_path": rollout[0]})
	if took > 3*time.Second {
		t.Fatalf("SessionEnd hook took %v with the ledger locked (Codex allows 3 s)", took)
	}
	_, _ = conn.ExecContext(ctx, "ROLLBACK")
	conn.Close()
	log, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
	if !strings.Contains(string(log), "SessionEnd") {
		t.Fatalf("no log line about the late hook:\n%s", log)
	}
	// Nothing lost: the sweep finds the new turn (run ended) and commits it.
	e.ctl("sweep")
	st := e.want("A", "committed", "exit", 2, 2)
	if st.TotalTurns != 2 {
		t.Fatalf("turns %d", st.TotalTurns)
	}
}

func appendTurn(t *testing.T, path, id, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tid := fmt.Sprintf("%s-manual-%d", id, time.Now().UnixNano())
	for _, r := range []string{
		`{"timestamp":"2026-11-22T01:00:00Z","type":"event_msg","payload":{"type":"task_started","turn_id":"` + tid + `"}}`,
		`{"timestamp":"2026-11-22T01:00:00Z","type":"event_msg","payload":{"type":"user_message","message":"` + text + `"}}`,
		`{"timestamp":"2026-11-22T01:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}}`,
		`{"timestamp":"2026-11-22T01:00:00Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"` + tid + `"}}`,
	} {
		fmt.Fprintln(f, r)
	}
}

// Crash points: cx killed (SIGKILL) at each step of ending and committing;
// a later sweep finishes with exactly one commit and no lost turn.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"capture", "ended", "leased", "accepted"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "CX_TEST_LEASE=1s")
			e.run("start A; hook SessionStart A startup; turn A one; turn A two; exit 0")
			// Re-open the session's next generation with new turns, then crash
			// while committing it.
			rollout, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
			appendTurn(t, rollout[0], "A", "three")
			cmd := exec.Command(e.cx, "ctl", "commit", "A")
			cmd.Env = e.environ("CX_TEST_CRASH_AT=" + point)
			_ = runTimeout(cmd, 30*time.Second)
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("cx did not crash at %s: %v", point, cmd.ProcessState)
			}
			// Later, when a lease taken before the crash has expired.
			if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 {
				t.Fatalf("sweep: %s", out)
			}
			e.ctlLater(2*time.Second, "sweep")
			st := e.sessions()["A"]
			if st.Status != "committed" || st.Generation != 2 || st.Commits != 2 || st.TotalTurns != 3 {
				out, _ := e.ctl("show", "A")
				t.Fatalf("after crash at %s and sweep: %+v\n%s", point, st, out)
			}
			archives, _ := e.db().Archives(context.Background(), "A")
			if len(archives) != 2 || archives[1].Generation != 2 {
				t.Fatalf("archives %+v", archives)
			}
			if n := e.doneJobs("A"); n != 2 {
				t.Fatalf("%d commit jobs done, want 2 (one per generation)", n)
			}
			var turns []map[string]any
			_ = json.Unmarshal([]byte(archives[1].Turns), &turns)
			if len(turns) != 1 || turns[0]["user"] != "three" {
				t.Fatalf("generation 2 archived %v", turns)
			}
		})
	}
}

// The ledger survives garbage in the rollout: a counted placeholder, no failure.
func TestGarbageLineIsCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A one; garbage A; turn A two; exit 0")
	out, _ := e.ctl("show", "A", "--json")
	if !strings.Contains(out, `"placeholders": 1`) || !strings.Contains(out, "capture.placeholder") {
		t.Fatalf("placeholder not counted:\n%s", out)
	}
	if st := e.want("A", "committed", "exit", 1, 1); st.TotalTurns != 2 {
		t.Fatalf("turns %d", st.TotalTurns)
	}
}

func TestInterruptNoted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; abort A never mind; turn A real; exit 0")
	out, _ := e.ctl("show", "A", "--json")
	if !strings.Contains(out, `"interrupted_turns": 1`) || !strings.Contains(out, "Interrupt turn") {
		t.Fatalf("interrupt not noted:\n%s", out)
	}
}

// A damaged ledger: Codex still runs with its exit status, the user is told
// once, hooks answer; the rollout keeps everything for later.
func TestDamagedLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(e.cxHome, 0o700); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte("not a database "), 400)
	if err := os.WriteFile(ledger.Path(e.cxHome), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A work; exit 7")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = runTimeout(cmd, 60*time.Second)
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Fatalf("exit %d, want Codex's 7; stderr %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "ledger damaged") || strings.Contains(errb.String(), "fake codex: hook") {
		t.Fatalf("stderr %q", errb.String())
	}
	if _, code := e.ctl("status"); code != 1 {
		t.Fatalf("status on a damaged ledger exited %d, want 1", code)
	}
}

// The local sink archives each generation's turns and checkpoint, and
// merges its evidence into the project's continuity files.
func TestLocalArchiveAndContinuity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A make the parser fast; exit 0")
	archives, err := e.db().Archives(context.Background(), "A")
	if err != nil || len(archives) != 1 {
		t.Fatalf("archives %+v %v", archives, err)
	}
	var cp struct {
		SchemaVersion int `json:"schema_version"`
		Task          struct {
			Text string `json:"text"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(archives[0].Checkpoint), &cp); err != nil || cp.SchemaVersion != 1 || cp.Task.Text != "make the parser fast" {
		t.Fatalf("checkpoint %s (%v)", archives[0].Checkpoint, err)
	}
	if !strings.Contains(archives[0].Continuity, "make the parser fast") {
		t.Fatalf("continuity %q", archives[0].Continuity)
	}
	files, _ := filepath.Glob(filepath.Join(e.cxHome, "projects", "*", "worktrees", "*", "continuity.md"))
	if len(files) != 1 {
		t.Fatalf("worktree continuity files %v", files)
	}
	out, _ := e.ctl("show", "A")
	if !strings.Contains(out, "[SESSION_CHECKPOINT v1]") || !strings.Contains(out, "make the parser fast") {
		t.Fatalf("show lacks the archive's checkpoint:\n%s", out)
	}
}

// A rollout rewritten mid-session (same turns, then a new one, in a new
// file at the same path): no turn lost, none doubled.
func TestRewrittenRolloutNoDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A one; turn A two; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, "two turns", func() bool { s, ok := e.sessions()["A"]; return ok && s.Turns == 2 })
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	data, _ := os.ReadFile(rollouts[0])
	// Rewrite: a new file (new inode), a changed first line, the same turns.
	os.Remove(rollouts[0])
	rewritten := bytes.Replace(data, []byte(`"cli_version":"0.999.0"`), []byte(`"cli_version":"0.999.1"`), 1)
	if err := os.WriteFile(rollouts[0], rewritten, 0o600); err != nil {
		t.Fatal(err)
	}
	appendTurn(t, rollouts[0], "A", "three")
	e.hook("Stop", map[string]any{"session_id": "A", "hook_event_name": "Stop", "transcript_path": rollouts[0]})
	st := e.sessions()["A"]
	if st.Turns != 3 || st.TotalTurns != 3 {
		t.Fatalf("after the rewrite: %+v, want 3 turns", st)
	}
	out, _ := e.ctl("show", "A", "--json")
	if !strings.Contains(out, "capture.rewritten") {
		t.Fatalf("rewrite not noted:\n%s", out)
	}
}

// Codex moves an archived thread's rollout to archived_sessions/: capture
// follows it there, the turns written after the move are committed, and
// the session shows where its rollout is now.
func TestArchivedRolloutIsFollowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run("start A; hook SessionStart A startup; turn A first; archive A; quiet on; turn A second; exit 0")
	st := e.want("A", "committed", "exit", 1, 1)
	if st.TotalTurns != 2 {
		t.Fatalf("turns %d, want 2 (the one written after the move too)", st.TotalTurns)
	}
	if !strings.Contains(st.TranscriptPath, string(filepath.Separator)+"archived_sessions"+string(filepath.Separator)) {
		t.Fatalf("transcript_path %q, want the archived location", st.TranscriptPath)
	}
	out, code := e.ctl("show", "A")
	if code != 0 || !strings.Contains(out, "archive g1: 2 turns") || !strings.Contains(out, "checkpoint (generation 1)") {
		t.Fatalf("show A:\n%s", out)
	}
}

// A panic in session discovery (a bug) is logged; the run's sessions are
// still ended and committed, and cx exits with Codex's status.
func TestDiscoveryPanicCostsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if code := e.run("start A; hook SessionStart A startup; turn A first; exit 4", "CX_TEST_PANIC_AT=discover"); code != 4 {
		t.Fatalf("exit %d, want 4", code)
	}
	e.want("A", "committed", "exit", 1, 1)
	log, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
	if !strings.Contains(string(log), "panic: test panic at discover") {
		t.Fatalf("cx.log:\n%s", log)
	}
}

// A run that cannot write the ledger (here: cx.db is not a database file
// it can open) loses nothing: Codex runs, cx leaves a breadcrumb, and the
// next sweep that can write the ledger records the session Codex wrote
// meanwhile and commits it once; doctor says what happened.
func TestUnrecordedRunRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.activeWindow1s()
	e.run("start A; hook SessionStart A startup; turn A first; exit 0")
	e.want("A", "committed", "exit", 1, 1)

	db := filepath.Join(e.cxHome, "cx.db")
	if err := os.Rename(db, db+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(db, 0o700); err != nil { // the ledger cannot be opened
		t.Fatal(err)
	}
	if code := e.run("start B; hook SessionStart B startup; turn B second; exit 0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if len(crumbs.List(e.cxHome)) == 0 {
		t.Fatal("no breadcrumb of the unrecorded run")
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(db+".away", db); err != nil {
		t.Fatal(err)
	}
	if out, _ := e.ctl("doctor"); !strings.Contains(out, "FAIL unrecorded runs") {
		t.Fatalf("doctor before recovery:\n%s", out)
	}
	// Past active_window: B is not being written.
	if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 || !strings.Contains(out, "recorded 1 session") {
		t.Fatalf("sweep: %d %s", code, out)
	}
	st := e.want("B", "committed", lifecycle.ReasonRecovered, 1, 1)
	if st.TotalTurns != 1 {
		t.Fatalf("B: %+v", st)
	}
	e.want("A", "committed", "exit", 1, 1)
	if out, _ := e.ctl("sweep"); strings.Contains(out, "recorded") {
		t.Fatalf("a second sweep recovered again: %s", out)
	}
	e.want("B", "committed", lifecycle.ReasonRecovered, 1, 1)
	if len(crumbs.List(e.cxHome)) != 0 {
		t.Fatal("the breadcrumb is still there")
	}
	if out, _ := e.ctl("doctor"); !strings.Contains(out, "recorded late from their rollouts") {
		t.Fatalf("doctor after recovery:\n%s", out)
	}
}

// A run that cannot write the ledger while a hook of its Codex can (a
// full disk freed meanwhile: the hook records the session, knowing no run):
// the sweep that reads the run's breadcrumb ends the session the hook
// left live — it had taken "recorded" for "someone else's to end", and the
// session waited out the idle TTL (the 20-minute chaos run, 0.128: three
// sessions live after healing).
func TestUnrecordedRunHookRecordedEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.activeWindow1s()
	db := e.ledgerUnopenable()
	cmd := e.cxCmd("quiet on; start $V7; turn $V7 second; sleep 3000; exit 0", "FAKE_TODAY=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rollout := e.oneRollout()
	id := codex.RolloutID(filepath.Base(rollout))
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	e.hook("UserPromptSubmit", map[string]any{"session_id": id, "hook_event_name": "UserPromptSubmit", "transcript_path": rollout, "cwd": e.w, "turn_id": "t1", "prompt": "second"})
	if st := e.sessions()[id]; st.Status != "live" || st.RunID != "" {
		t.Fatalf("the hook recorded %+v", st)
	}
	if err := runWait(cmd, 30*time.Second); err != nil {
		t.Fatalf("cx: %v", err)
	}
	if len(crumbs.List(e.cxHome)) == 0 {
		t.Fatal("no breadcrumb of the unrecorded run")
	}
	if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	e.want(id, "committed", lifecycle.ReasonRecovered, 1, 1)
	if len(crumbs.List(e.cxHome)) != 0 {
		t.Fatal("the breadcrumb is still there")
	}
}

// A breadcrumb's sessions belong to the CX_HOME whose run left it: while
// one CX_HOME cannot write its ledger, a run of another CX_HOME on the same
// Codex home (and a Codex started without cx) writes sessions too; the
// recovery records the unrecorded run's session only, and at once — the
// run has ended, its Codex with it.
func TestUnrecordedBelongsToItsCXHome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := *e
	other.cxHome = e.cxHome + "-other"
	if err := os.MkdirAll(filepath.Join(e.cxHome, "cx.db"), 0o700); err != nil { // cannot be opened
		t.Fatal(err)
	}
	if code := e.run("start B; hook SessionStart B startup; turn B unrecorded; exit 0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if code := other.run("start C; hook SessionStart C startup; turn C elsewhere; exit 0"); code != 0 {
		t.Fatalf("other CX_HOME: exit %d", code)
	}
	other.want("C", "committed", "exit", 1, 1)
	if err := os.Remove(filepath.Join(e.cxHome, "cx.db")); err != nil {
		t.Fatal(err)
	}
	if out, code := e.ctl("sweep"); code != 0 || !strings.Contains(out, "recorded 1 session") {
		t.Fatalf("sweep: %d %s", code, out)
	}
	e.want("B", "committed", lifecycle.ReasonRecovered, 1, 1)
	if _, ok := e.sessions()["C"]; ok {
		t.Fatalf("the other CX_HOME's session was recorded here: %v", e.sessions())
	}
	if len(crumbs.List(e.cxHome)) != 0 {
		t.Fatal("the breadcrumb is still there")
	}
}

// A session cx knows of no run (recorded late from its rollout, or by a
// hook that knew no run), ended, then resumed where nothing reached the
// ledger — the resuming cx killed while CX_HOME was full, so neither its
// run, nor its hooks, nor a breadcrumb was written: the sweep finds the
// rollout grown past what was captured and ends the new turns' generation
// once its Codex is done. It had looked only at such sessions' live ones,
// and the resumed turn reached no sink.
func TestRunlessSessionResumedUnseen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.activeWindow1s()
	db := e.ledgerUnopenable()
	if code := e.run("start B; hook SessionStart B startup; turn B first; exit 0"); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}
	if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 || !strings.Contains(out, "recorded 1 session") {
		t.Fatalf("sweep: %d %s", code, out)
	}
	if st := e.want("B", "committed", lifecycle.ReasonRecovered, 1, 1); st.RunID != "" {
		t.Fatalf("B has a run: %+v", st)
	}

	// Codex resumes B with nothing of cx's reaching the ledger; while it
	// runs (its writer lock held) the sweep leaves B alone.
	resume := exec.Command(os.Args[0])
	resume.Dir = e.w
	resume.Env = e.environ("FAKE_SCRIPT=quiet on\nstart B\nturn B second\nsleep 3000\nexit 0")
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); rolloutCount(e.oneRollout(), "task_complete") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the resumed turn never reached the rollout")
		}
	}
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	e.want("B", "committed", lifecycle.ReasonRecovered, 1, 1)
	if err := runWait(resume, 30*time.Second); err != nil {
		t.Fatalf("codex resume: %v", err)
	}
	if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	if st := e.want("B", "committed", lifecycle.ReasonRecovered, 2, 2); st.TotalTurns != 2 {
		t.Fatalf("B: %+v", st)
	}
	if out, code := e.ctlLater(2*time.Second, "sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	e.want("B", "committed", lifecycle.ReasonRecovered, 2, 2)
}

// rolloutCount counts the times the rollout at path holds s.
func rolloutCount(path, s string) int {
	data, _ := os.ReadFile(path)
	return bytes.Count(data, []byte(s))
}

// A session a hook recorded as no run's (its attribution ran out of time
// on a busy ledger, or Codex was started without cx), whose Codex was
// killed — no SessionEnd — is ended by the next sweep once Codex no longer
// holds the thread's writer lock, not 30 minutes on at the idle TTL (the
// chaos run, 0.169: such a session kept the run from going quiet). A Codex
// that keeps no writer locks is still judged by the idle TTL: its
// rollout's age cannot tell an idle user from a dead Codex.
func TestRunlessSessionOfDeadCodexEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	codexCmd := exec.Command(os.Args[0])
	codexCmd.Dir = e.w
	codexCmd.Env = e.environ("FAKE_SCRIPT=start $V7\nhook SessionStart $V7 startup\nturn $V7 hello\nsleep 2000\ndie 9")
	if err := codexCmd.Start(); err != nil {
		t.Fatal(err)
	}
	id := codex.RolloutID(filepath.Base(e.oneRollout()))
	waitFor(t, "the turn recorded", func() bool { s, ok := e.sessions()[id]; return ok && s.Turns == 1 })
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	if st := e.want(id, "live", "", 1, 0); st.RunID != "" {
		t.Fatalf("a run holds it: %+v", st)
	}
	_ = runWait(codexCmd, 30*time.Second) // killed by its own signal
	if out, code := e.ctl("sweep"); code != 0 {
		t.Fatalf("sweep: %d %s", code, out)
	}
	e.want(id, "committed", "orphan", 1, 1)
}

// activeWindow1s configures active_window = 1s: a rollout a second old is
// done, for a Codex without writer locks (a test's clock moves it on).
func (e *env) activeWindow1s() {
	e.t.Helper()
	if err := os.MkdirAll(e.cxHome, 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cxHome, "config.toml"), []byte("[lifecycle]\nactive_window = \"1s\"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// ledgerUnopenable puts a directory where the ledger goes, so that no cx
// can open it, and returns its path (removing it lets cx open it again).
func (e *env) ledgerUnopenable() string {
	e.t.Helper()
	db := filepath.Join(e.cxHome, "cx.db")
	if err := os.Mkdir(db, 0o700); err != nil {
		e.t.Fatal(err)
	}
	return db
}

// A session its hook recorded without a run (its attribution ran out of
// time on a busy ledger) and discovery never saw is the run's to end at
// its exit when Codex's files say it is its Codex's: before, the exit left
// it to others as "recorded by whoever ran it", and a Codex without writer
// locks (0.128) left it live until the idle TTL.
func TestRunlessSessionOfTheRunEndedAtExit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.cxCmd("quiet on; start $V7; turn $V7 first; sleep 1500; exit 0", "CX_TEST_PANIC_AT=discover", "FAKE_TODAY=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rollout := e.oneRollout()
	id := codex.RolloutID(filepath.Base(rollout))
	e.hook("UserPromptSubmit", map[string]any{"session_id": id, "hook_event_name": "UserPromptSubmit", "transcript_path": rollout, "cwd": e.w, "turn_id": "t1", "prompt": "first"})
	if st := e.sessions()[id]; st.Status != "live" || st.RunID != "" {
		t.Fatalf("the hook recorded %+v", st)
	}
	if err := runWait(cmd, 30*time.Second); err != nil {
		t.Fatalf("cx: %v", err)
	}
	if st := e.want(id, "committed", "exit", 1, 1); st.RunID == "" {
		t.Fatalf("no run took it: %+v", st)
	}
}

// A run that ends while another run's Codex of the same home runs leaves
// that Codex's thread to its own run, though nothing on disk says whose it
// is (0.128 keeps no writer lock; a quick exec logs no thread rows): `cx
// exec` × 16, 4 at once, ended a sibling's live thread as its own.
func TestExitLeavesASiblingsThread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// No hooks and no discovery (a run too quick to look): only the exits
	// can learn the thread.
	first := e.cxCmd("quiet on; sleep 1500; exit 0", "CX_TEST_PANIC_AT=discover", "FAKE_TODAY=1", "FAKE_NO_LOCKS=1")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	second := e.cxCmd("quiet on; start $V7; turn $V7 the second one; sleep 3000; exit 0", "CX_TEST_PANIC_AT=discover", "FAKE_TODAY=1", "FAKE_NO_LOCKS=1")
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	id := codex.RolloutID(filepath.Base(e.oneRollout()))
	if err := runWait(first, 30*time.Second); err != nil {
		t.Fatalf("first cx: %v", err)
	}
	if st, ok := e.sessions()[id]; ok && st.Status != "live" {
		t.Fatalf("the first run's exit took the second's live thread: %+v", st)
	}
	if err := runWait(second, 30*time.Second); err != nil {
		t.Fatalf("second cx: %v", err)
	}
	e.want(id, "committed", "exit", 1, 1)
}

// A run starts CX_HOME's hook host beside Codex's launch when cx's hooks
// run in that Codex (installed and trusted) and none runs, so its first
// hook finds it listening; none is started when the hooks are kept from
// the host, not trusted, or not there.
func TestRunStartsTheHookHost(t *testing.T) {
	cases := []struct {
		name    string
		extra   []string
		hooks   string // "trusted", "untrusted" or "none"
		started bool
	}{
		{"hooks installed and trusted", nil, "trusted", true},
		{"hooks kept from the host", []string{hookwire.HostEnv + "=off"}, "trusted", false},
		{"hooks not trusted", nil, "untrusted", false},
		{"no hooks of cx's", nil, "none", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			hooks := filepath.Join(e.codexHome, "hooks.json")
			switch c.hooks {
			case "trusted":
				trustHooks(t, e)
			case "none":
				if err := os.Remove(hooks); err != nil {
					t.Fatal(err)
				}
			}
			// No hook in the run: a host there was started by the run.
			if code := e.run("sleep 300;exit 0", c.extra...); code != 0 {
				t.Fatalf("exit %d", code)
			}
			if got := hookwire.AwaitSocket(e.cxHome, 5*time.Second); got != c.started {
				t.Fatalf("a host listening after the run: %v, want %v", got, c.started)
			}
		})
	}
}

// trustHooks records trust for e's hooks in its Codex home's config.toml,
// as Codex does when the user trusts them (codex.TrustRecorded): its
// SessionStart handler's key, as `cx ctl install` leaves it.
func trustHooks(t testing.TB, e *env) {
	t.Helper()
	key := filepath.Join(e.codexHome, "hooks.json") + ":session_start:0:0"
	trust := codex.TrustStateHeader(key) + "\ntrusted_hash = \"sha256:0\"\n"
	if err := os.WriteFile(filepath.Join(e.codexHome, "config.toml"), []byte(trust), 0o600); err != nil {
		t.Fatal(err)
	}
}
