package lifecycle

// In-process tests of the state machine's decisions: a Manager over a temp
// ledger, a fake clock, rollouts written as Codex writes them (0.128's
// shape: no writer locks), the hooks and runs handed to it as the hook
// server and the supervisor would. What only a process shows (a killed cx,
// the hook's budget, the real Codex) stays in the process tests.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/runproc"
	"cx/internal/sink"
	"cx/internal/sinks"
)

// machine is a state machine under test.
type machine struct {
	t         testing.TB
	ctx       context.Context
	m         *Manager
	db        *ledger.DB
	home      string
	codexHome string
	cwd       string
	clock     time.Time
	turns     map[string]int // rollout turns written per session
}

func newMachine(t testing.TB) *machine {
	t.Helper()
	return newMachineWith(t, sinks.Build)
}

// newMachineWith is newMachine with the sinks build makes.
func newMachineWith(t testing.TB, build SinkBuilder) *machine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	mc := &machine{t: t, ctx: ctx, home: t.TempDir(), codexHome: t.TempDir(), cwd: t.TempDir(),
		clock: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), turns: map[string]int{}}
	env := map[string]string{"CX_HOME": mc.home, "CODEX_HOME": mc.codexHome}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.Load(getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sinks = []string{"local"}
	db, err := ledger.Open(ctx, mc.home, ledger.Writer, ledger.Options{Now: func() time.Time { return mc.clock }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mc.db = db
	mc.m = New(cfg, db, build)
	mc.m.now = func() time.Time { return mc.clock }
	mc.m.getenv = getenv
	return mc
}

// rollout is session id's rollout file (created with its session_meta).
func (mc *machine) rollout(id string) string {
	mc.t.Helper()
	dir := filepath.Join(mc.codexHome, "sessions", "2026", "11", "20")
	path := filepath.Join(dir, "rollout-2026-11-20T09-00-00-"+id+".jsonl")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		mc.t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"timestamp":"2026-11-20T09:00:00Z","type":"session_meta","payload":{"id":%q,"timestamp":"2026-11-20T09:00:00Z","cwd":%q,"originator":"codex_cli_rs","cli_version":"0.128.0","source":"cli"}}`+"\n", id, mc.cwd)
	if err := os.WriteFile(path, []byte(meta), 0o600); err != nil {
		mc.t.Fatal(err)
	}
	return path
}

// turn appends one whole turn to id's rollout.
func (mc *machine) turn(id, prompt string) {
	mc.t.Helper()
	mc.turns[id]++
	tid := fmt.Sprintf("%s-t%d", id, mc.turns[id])
	f, err := os.OpenFile(mc.rollout(id), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		mc.t.Fatal(err)
	}
	defer f.Close()
	ts := mc.clock.Format(time.RFC3339)
	fmt.Fprintf(f, `{"timestamp":%q,"type":"event_msg","payload":{"type":"task_started","turn_id":%q}}`+"\n", ts, tid)
	fmt.Fprintf(f, `{"timestamp":%q,"type":"event_msg","payload":{"type":"user_message","message":%q}}`+"\n", ts, prompt)
	fmt.Fprintf(f, `{"timestamp":%q,"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`+"\n", ts)
	fmt.Fprintf(f, `{"timestamp":%q,"type":"event_msg","payload":{"type":"task_complete","turn_id":%q}}`+"\n", ts, tid)
}

// hook hands the state machine one hook event of session id.
func (mc *machine) hook(event, id string, set func(*codex.HookPayload), runID string) HookResult {
	mc.t.Helper()
	p := codex.HookPayload{SessionID: id, TranscriptPath: mc.rollout(id), Cwd: mc.cwd, HookEventName: event}
	if set != nil {
		set(&p)
	}
	res, err := mc.m.HandleHook(mc.ctx, Hook{Event: event, Payload: p, RunID: runID, PPID: os.Getpid()})
	if err != nil {
		mc.t.Fatalf("%s %s: %v", event, id, err)
	}
	return res
}

func source(s string) func(*codex.HookPayload) { return func(p *codex.HookPayload) { p.Source = s } }

// session is id's session in the ledger.
func (mc *machine) session(id string) ledger.Session {
	mc.t.Helper()
	s, err := mc.db.Session(mc.ctx, id)
	if err != nil {
		mc.t.Fatalf("session %s: %v", id, err)
	}
	return s
}

// generations are id's generations as "g<n> <status> <reason>".
func (mc *machine) generations(id string) []string {
	mc.t.Helper()
	gens, err := mc.db.Generations(mc.ctx, id)
	if err != nil {
		mc.t.Fatal(err)
	}
	var out []string
	for _, g := range gens {
		out = append(out, fmt.Sprintf("g%d %s %s", g.Generation, g.Status, g.EndReason))
	}
	return out
}

// work works the outbox (the commits the ends enqueued).
func (mc *machine) work() {
	mc.t.Helper()
	if _, err := mc.m.Outbox().Work(mc.ctx, nil); err != nil {
		mc.t.Fatal(err)
	}
}

func (mc *machine) archived(id string) int {
	mc.t.Helper()
	as, err := mc.db.Archives(mc.ctx, id)
	if err != nil {
		mc.t.Fatal(err)
	}
	return len(as)
}

// A session's life by hooks alone: started, two turns, ended by Codex's
// SessionEnd — one generation, ended once, committed once with both turns;
// every later ender finds nothing to end.
func TestMachineSessionEndCommitsOnce(t *testing.T) {
	mc := newMachine(t)
	mc.hook(codex.HookSessionStart, "s1", source("startup"), "")
	mc.turn("s1", "add a retry to the sender")
	mc.hook(codex.HookStop, "s1", nil, "")
	mc.turn("s1", "now test it")
	mc.hook(codex.HookSessionEnd, "s1", nil, "")
	mc.work()
	if got := fmt.Sprint(mc.generations("s1")); got != "[g1 committed session_end]" {
		t.Fatalf("generations %s", got)
	}
	s := mc.session("s1")
	if s.Status != ledger.Committed || s.Turns != 2 {
		t.Errorf("session %s with %d turns, want committed with 2", s.Status, s.Turns)
	}
	for _, reason := range []string{reasonExit, reasonOrphan, ReasonManual} {
		if ended, err := mc.m.End(mc.ctx, "s1", reason, EndOptions{}); err != nil || ended {
			t.Errorf("a second end (%s): %v, %v", reason, ended, err)
		}
	}
	mc.work()
	if n := mc.archived("s1"); n != 1 {
		t.Errorf("%d archives, want 1", n)
	}
}

// A prompt and a stop of a session the ledger knows write once: the hook
// recorded and its turns captured in one transaction (many hooks at once
// queue on the ledger's writes). One whose session is not yet known, or
// whose record changes what the capture reads (its transcript first
// named), writes twice, and captures the same.
func TestMachinePromptAndStopWriteOnce(t *testing.T) {
	mc := newMachine(t)
	written := func(event, id string, set func(*codex.HookPayload)) int64 {
		t.Helper()
		before := mc.db.Written()
		mc.hook(event, id, set, "")
		return mc.db.Written() - before
	}
	hooks := func(id string) int {
		t.Helper()
		evs, err := mc.db.Events(mc.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Kind == "hook" {
				n++
			}
		}
		return n
	}
	mc.hook(codex.HookSessionStart, "s1", source("startup"), "")
	mc.turn("s1", "add a retry to the sender")
	if n := written(codex.HookUserPromptSubmit, "s1", nil); n != 1 {
		t.Errorf("a prompt wrote %d transactions, want 1", n)
	}
	mc.turn("s1", "now test it")
	if n := written(codex.HookStop, "s1", nil); n != 1 {
		t.Errorf("a stop wrote %d transactions, want 1", n)
	}
	if s := mc.session("s1"); s.Turns != 2 || hooks("s1") != 3 {
		t.Errorf("s1: %d turns and %d hooks recorded, want 2 and 3", s.Turns, hooks("s1"))
	}

	mc.turn("s2", "a session whose start cx never saw")
	if n := written(codex.HookStop, "s2", nil); n != 2 {
		t.Errorf("the first hook of a session wrote %d transactions, want 2", n)
	}
	if s := mc.session("s2"); s.Turns != 1 {
		t.Errorf("s2: %d turns, want 1", s.Turns)
	}

	noPath := func(p *codex.HookPayload) { p.Source, p.TranscriptPath = "startup", "" }
	mc.hook(codex.HookSessionStart, "s3", noPath, "")
	mc.turn("s3", "a start that named no transcript")
	if n := written(codex.HookStop, "s3", nil); n != 2 {
		t.Errorf("a stop that names the transcript first wrote %d transactions, want 2", n)
	}
	if s := mc.session("s3"); s.Turns != 1 || s.TranscriptPath != mc.rollout("s3") {
		t.Errorf("s3: %d turns, transcript %q; want 1 and %q", s.Turns, s.TranscriptPath, mc.rollout("s3"))
	}
}

// fakeSink records what it is handed to commit.
type fakeSink struct{ commits []sink.Request }

func (f *fakeSink) Commit(_ context.Context, req sink.Request) error {
	f.commits = append(f.commits, req)
	return nil
}

// The state machine commits to the sinks it is handed, whatever they are:
// a fake in place of the local sink gets the session's one commit, whole.
func TestMachineCommitsToTheSinksItIsHanded(t *testing.T) {
	fake := &fakeSink{}
	mc := newMachineWith(t, func(sink.Host) map[string]sink.Sink { return map[string]sink.Sink{"local": fake} })
	mc.hook(codex.HookSessionStart, "s1", source("startup"), "")
	mc.turn("s1", "add a retry to the sender")
	mc.hook(codex.HookStop, "s1", nil, "")
	mc.hook(codex.HookSessionEnd, "s1", nil, "")
	mc.work()
	mc.work()
	if len(fake.commits) != 1 {
		t.Fatalf("%d commits to the fake sink, want 1", len(fake.commits))
	}
	if c := fake.commits[0]; c.Session.ID != "s1" || c.Generation.Generation != 1 || len(c.Turns) != 1 || c.Turns[0].User != "add a retry to the sender" {
		t.Errorf("commit: session %s g%d, %d turns %+v", c.Session.ID, c.Generation.Generation, len(c.Turns), c.Turns)
	}
	if got := fmt.Sprint(mc.generations("s1")); got != "[g1 committed session_end]" {
		t.Errorf("generations %s", got)
	}
}

// begin starts a run whose Codex is this process (hooks handed over with
// its pid are attributed to it), and waits until it is recorded.
func (mc *machine) begin(id string) *Run {
	mc.t.Helper()
	r := mc.m.BeginRun(mc.ctx, RunInfo{ID: id, CodexHome: mc.codexHome, CodexVersion: "0.128.0", Cwd: mc.cwd, Sinks: []string{"local"}, Started: mc.clock})
	r.ChildStarted(os.Getpid())
	deadline := time.Now().Add(10 * time.Second)
	for {
		if run, err := mc.db.Run(mc.ctx, id); err == nil && run.CodexPID == os.Getpid() {
			return r
		}
		if time.Now().After(deadline) {
			mc.t.Fatalf("run %s not recorded with its Codex", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The decisions of a run's hooks and exit, table-driven: each case plays
// events in one run, then Codex exits; the generations each session ends
// with say who ended what, and why.
func TestMachineRunDecisions(t *testing.T) {
	for _, c := range []struct {
		name string
		play func(mc *machine, run string)
		want map[string]string // session → its generations
	}{
		{"the exit ends the live session", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookStop, "a", nil, run)
		}, map[string]string{"a": "[g1 committed exit]"}},
		{"/new ends the session it replaces", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookStop, "a", nil, run)
			mc.hook(codex.HookSessionStart, "b", source("startup"), run)
			mc.turn("b", "second")
			mc.hook(codex.HookStop, "b", nil, run)
		}, map[string]string{"a": "[g1 committed new]", "b": "[g1 committed exit]"}},
		{"/clear ends it as cleared; a session with no turn ends empty, with nothing to commit", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookStop, "a", nil, run)
			mc.hook(codex.HookSessionStart, "b", source("clear"), run)
		}, map[string]string{"a": "[g1 committed clear]", "b": "[g1 empty exit]"}},
		{"a compaction ends a generation and opens the next", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookPreCompact, "a", nil, run)
			mc.hook(codex.HookSessionStart, "a", source("compact"), run)
			mc.turn("a", "after the compaction")
			mc.hook(codex.HookUserPromptSubmit, "a", nil, run)
		}, map[string]string{"a": "[g1 committed compact g2 committed exit]"}},
		{"Codex's SessionEnd first, then the exit finds nothing to end", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookSessionEnd, "a", nil, run)
		}, map[string]string{"a": "[g1 committed session_end]"}},
		{"a resumed session opens its next generation", func(mc *machine, run string) {
			mc.hook(codex.HookSessionStart, "a", source("startup"), run)
			mc.turn("a", "first")
			mc.hook(codex.HookSessionEnd, "a", nil, run)
			mc.work()
			mc.hook(codex.HookSessionStart, "a", source("resume"), run)
			mc.turn("a", "again")
			mc.hook(codex.HookStop, "a", nil, run)
		}, map[string]string{"a": "[g1 committed session_end g2 committed exit]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mc := newMachine(t)
			r := mc.begin("r1")
			c.play(mc, "r1")
			if err := r.Finish(mc.ctx, ExitInfo{Code: 0}); err != nil {
				t.Fatal(err)
			}
			mc.work()
			for id, want := range c.want {
				if got := fmt.Sprint(mc.generations(id)); got != want {
					t.Errorf("%s: generations %s, want %s", id, got, want)
				}
				if s := mc.session(id); s.RunID != "r1" {
					t.Errorf("%s: run %q, want r1 (adopted by its hooks)", id, s.RunID)
				}
			}
		})
	}
}

// deadPID is the pid of a process that has exited (and been waited for).
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 0"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// A sweep's decisions: a session of no run idle past the TTL ends idle; a
// run whose cx died leaves its live session to end as an orphan; a session
// seen within the TTL stays live; each end is committed once.
func TestMachineSweepDecisions(t *testing.T) {
	mc := newMachine(t)
	// Of no run, idle: recorded by hooks of a Codex run without cx.
	mc.hook(codex.HookSessionStart, "idle", source("startup"), "")
	mc.turn("idle", "something")
	mc.hook(codex.HookStop, "idle", nil, "")
	// Of a run whose cx is gone.
	dead := deadPID(t)
	if err := mc.db.Tx(mc.ctx, func(tx *ledger.Tx) error {
		return tx.PutRun(mc.ctx, ledger.Run{ID: "gone", PID: dead, CodexPID: dead, CodexHome: mc.codexHome, Cwd: mc.cwd, Sinks: []string{"local"}, StartedAt: mc.clock})
	}); err != nil {
		t.Fatal(err)
	}
	mc.turn("orphan", "work of a run that died")
	if err := mc.m.Learn(mc.ctx, ledger.Session{ID: "orphan", RunID: "gone", TranscriptPath: mc.rollout("orphan"), Cwd: mc.cwd, CodexHome: mc.codexHome, Sinks: []string{"local"}}, "test", ""); err != nil {
		t.Fatal(err)
	}
	// Time passes: past the idle TTL for the first; a fresh one is seen now.
	mc.clock = mc.clock.Add(mc.m.cfg.Lifecycle.IdleTTL.Duration + time.Minute)
	mc.hook(codex.HookSessionStart, "fresh", source("startup"), "")
	mc.turn("fresh", "just now")
	mc.hook(codex.HookStop, "fresh", nil, "")
	res, err := mc.m.SweepNow(mc.ctx, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Orphans != 1 || res.Ended < 2 || res.Jobs == 0 {
		t.Errorf("sweep: %+v, want 1 orphan run and 2 ends worked", res)
	}
	// A generation is a row once it ends: the fresh one has none yet.
	for id, want := range map[string]string{"idle": "[g1 committed idle]", "orphan": "[g1 committed orphan]", "fresh": "[]"} {
		if got := fmt.Sprint(mc.generations(id)); got != want {
			t.Errorf("%s: generations %s, want %s", id, got, want)
		}
	}
	if s := mc.session("fresh"); s.Status != ledger.Live {
		t.Errorf("fresh: %s, want live", s.Status)
	}
	// A second sweep has nothing to do.
	if res, err := mc.m.SweepNow(mc.ctx, SweepOptions{}); err != nil || res.Orphans+res.Ended+res.Jobs != 0 {
		t.Errorf("second sweep: %+v, %v", res, err)
	}
	// `cx ctl commit`: the fresh one now, once.
	for i, want := range []bool{true, false} {
		if ended, err := mc.m.CommitNow(mc.ctx, "fresh"); err != nil || ended != want {
			t.Errorf("commit %d: %v, %v; want %v", i+1, ended, err, want)
		}
	}
	if got := fmt.Sprint(mc.generations("fresh")); got != "[g1 committed manual]" {
		t.Errorf("fresh after commit: %s", got)
	}
}

// What a block about the session itself is built from: the checkpoint as
// of its last capture, from the ledger.
func TestMachineOwnContext(t *testing.T) {
	mc := newMachine(t)
	p := codex.HookPayload{SessionID: "a", TranscriptPath: mc.rollout("a"), Cwd: mc.cwd, Source: "compact"}
	if own := mc.m.OwnContext(mc.ctx, p); own.Checkpoint != nil {
		t.Errorf("before any capture: %+v", own.Checkpoint)
	}
	mc.hook(codex.HookSessionStart, "a", source("startup"), "")
	mc.turn("a", "rename the config field timeout_ms")
	mc.hook(codex.HookStop, "a", nil, "")
	own := mc.m.OwnContext(mc.ctx, p)
	if own.Checkpoint == nil || own.Checkpoint.Task == nil || !strings.Contains(own.Checkpoint.Task.Text, "timeout_ms") || own.SkipTranscript || own.RemoteOverview != nil {
		t.Errorf("after a turn: %+v", own)
	}
}

// A run begun after its Codex started (as cx launches Codex first)
// records Codex's pid and start in its first write: a hook of that Codex
// is attributed to it at once, before discovery runs.
func TestRunRecordsCodexInItsFirstWrite(t *testing.T) {
	mc := newMachine(t)
	mc.m.BeginRun(mc.ctx, RunInfo{ID: "run-first", CodexHome: mc.codexHome, CodexVersion: "0.128.0", Cwd: mc.cwd, Sinks: []string{"local"}, Started: mc.clock, CodexPID: os.Getpid()})
	deadline := time.Now().Add(10 * time.Second)
	for {
		run, err := mc.db.Run(mc.ctx, "run-first")
		if err == nil {
			if run.CodexPID != os.Getpid() || run.CodexStart == 0 {
				t.Fatalf("the run's first write has Codex pid %d start %d; want %d and its start", run.CodexPID, run.CodexStart, os.Getpid())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run not recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if run, owned := runproc.Attribute(mc.ctx, mc.db, "run-first", os.Getpid()); !owned || run.ID != "run-first" {
		t.Fatalf("a hook of this Codex is not attributed to the run: %v %v", run.ID, owned)
	}
}
