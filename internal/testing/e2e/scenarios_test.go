package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/ledger"
	"cx/internal/proc"
	"cx/internal/testing/codextest"

	_ "modernc.org/sqlite"
)

func TestMain(m *testing.M) {
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

// eachCodex runs f as a parallel subtest per installed Codex version.
func eachCodex(t *testing.T, f func(t *testing.T, in codextest.Install)) {
	t.Helper()
	for _, in := range codextest.Installs(t) {
		t.Run(in.Version, func(t *testing.T) {
			t.Parallel()
			f(t, in)
		})
	}
}

// checkTerminal is scenario 8: the terminal is exactly as it was.
func checkTerminal(t *testing.T, tu *TUI) {
	t.Helper()
	before, after := tu.Stty()
	if before != after {
		t.Fatalf("terminal settings changed:\nbefore %s\nafter  %s", before, after)
	}
}

// knownToCX checks that every session with a rollout reached cx's hook
// handler. (The lifecycle's ledger will make this "committed exactly once".)
func knownToCX(t *testing.T, h *H) {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range h.HookEvents() {
		seen[e.SessionID] = true
	}
	for _, id := range h.RolloutSessionIDs() {
		if !seen[id] {
			t.Errorf("session %s has a rollout but never reached cx", id)
		}
	}
}

// committedOnce checks the lifecycle's promise for every session that has a
// rollout: each is committed, and every generation exactly once — none lost
// (commits == generation), none doubled (one done job per generation and
// sink, which the ledger's unique key enforces). It returns the states.
func committedOnce(t *testing.T, h *H) map[string]SessionState {
	t.Helper()
	var states map[string]SessionState
	deadline := time.Now().Add(20 * time.Second)
	for {
		states = h.Sessions()
		pending := false
		for _, id := range h.RolloutSessionIDs() {
			st, ok := states[id]
			pending = pending || !ok || st.Status != "committed"
		}
		if !pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range h.RolloutSessionIDs() {
		st, ok := states[id]
		switch {
		case !ok:
			t.Errorf("session %s has a rollout but is unknown to cx", id)
		case st.Status != "committed":
			t.Errorf("session %s is %s (generation %d), want committed", id, st.Status, st.Generation)
		case st.Commits != st.Generation:
			t.Errorf("session %s: %d commits for %d generations", id, st.Commits, st.Generation)
		}
	}
	// And every session cx lists is one of those: Codex's helper threads
	// (0.169's title generation with a catalog model) are not sessions.
	rollouts := h.RolloutSessionIDs()
	for id, st := range states {
		if !slices.Contains(rollouts, id) {
			t.Errorf("cx lists session %s (%s, end %q) that has no rollout", id, st.Status, st.EndReason)
		}
	}
	sameCheckpoints(t, h, states)
	if t.Failed() {
		t.Logf("status:\n%s", h.CXCtl("ctl", "status"))
	}
	return states
}

// sameCheckpoints: each generation's checkpoint, which the ledger keeps as
// capture folds the turns, is byte for byte the full reduction of its
// rollout up to the generation's end.
func sameCheckpoints(t *testing.T, h *H, states map[string]SessionState) {
	t.Helper()
	db, err := ledger.Open(context.Background(), h.CXHome, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Errorf("open the ledger: %v", err)
		return
	}
	defer db.Close()
	for id, st := range states {
		data, err := os.ReadFile(st.TranscriptPath)
		if err != nil {
			t.Errorf("rollout of %s: %v", id, err)
			continue
		}
		gens, _ := db.Generations(context.Background(), id)
		for _, g := range gens {
			if g.Status == ledger.Empty {
				continue
			}
			kept, err := db.GenerationCheckpoint(context.Background(), id, g.Generation)
			want := checkpoint.FromRollout(data[:min(len(data), int(g.EndOffset))], checkpoint.DefaultCaps).JSON()
			if err != nil || kept != string(want) {
				t.Errorf("session %s g%d: the ledger's checkpoint (%v) is not the full reduction of its rollout up to %d:\n--- kept\n%s\n--- full\n%s",
					id, g.Generation, err, g.EndOffset, kept, want)
			}
		}
	}
}

func hasEvent(evs []HookEvent, name string) bool {
	return slices.ContainsFunc(evs, func(e HookEvent) bool { return e.Event == name })
}

// Scenario 1: start, one turn, /exit — exit 0, a rollout, Stop seen.
func TestScenarioExit(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("hello from the harness", "mock reply: hello from the harness")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d; screen:\n%s", code, tu.Screen())
		}
		checkTerminal(t, tu)
		if len(h.Rollouts()) != 1 {
			t.Fatalf("rollouts %v", h.Rollouts())
		}
		evs := h.HookEvents()
		if !hasEvent(evs, "Stop") {
			t.Fatalf("no Stop hook; events %v", EventNames(evs))
		}
		st := committedOnce(t, h)[h.RolloutSessionIDs()[0]]
		want := "exit" // 0.128 has no SessionEnd: the wrapper's end is the only one
		if hasEvent(evs, "SessionEnd") {
			want = "session_end"
		}
		if st.EndReason != want || st.Generation != 1 || st.TotalTurns != 1 {
			t.Fatalf("session %+v, want generation 1 with 1 turn ended by %s", st, want)
		}
	})
}

// startTurn starts cx, runs one turn and returns the TUI with Codex's pid.
func startTurn(t *testing.T, h *H, prompt string, args ...string) (*TUI, int) {
	t.Helper()
	tu := h.StartTUI(args...)
	tu.WaitReady()
	tu.Prompt(prompt, "mock reply: "+prompt)
	return tu, tu.CodexPid()
}

// Scenario 2: the ways Codex or cx can be stopped from outside.
func TestScenarioSignals(t *testing.T) {
	cases := []struct {
		name       string
		toCodex    bool
		sig        syscall.Signal
		wantExit   int
		wantReason string // with no native SessionEnd
	}{
		{"SIGTERM to codex", true, syscall.SIGTERM, 143, "killed:TERM"},
		{"SIGKILL to codex", true, syscall.SIGKILL, 137, "killed:KILL"},
		{"SIGTERM to cx", false, syscall.SIGTERM, 0, "signal:TERM"},
		{"SIGHUP to cx", false, syscall.SIGHUP, 0, "signal:HUP"},
	}
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		for _, c := range cases {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				h := New(t, in, Options{})
				tu, codex := startTurn(t, h, "before the "+strings.Fields(c.name)[0])
				target := codex
				if !c.toCodex {
					target = tu.CXPid()
				}
				tu.Signal(target, c.sig)
				if code := tu.WaitExit(30 * time.Second); code != c.wantExit {
					t.Fatalf("cx exit %d, want %d; screen:\n%s", code, c.wantExit, tu.Screen())
				}
				checkTerminal(t, tu)
				if Alive(codex) {
					t.Fatalf("codex %d still running after cx exited", codex)
				}
				if len(h.RolloutSessionIDs()) != 1 {
					t.Fatalf("rollouts: %v", h.Rollouts())
				}
				knownToCX(t, h)
				st := committedOnce(t, h)[h.RolloutSessionIDs()[0]]
				// Even where the polite stop lets Codex end its session itself
				// (0.169's SessionEnd), the end is the signal's.
				want := c.wantReason
				if st.EndReason != want {
					t.Fatalf("end reason %q, want %q", st.EndReason, want)
				}
			})
		}
		t.Run("SIGKILL_to_cx_then_new_cx", func(t *testing.T) {
			h := New(t, in, Options{})
			tu, codex := startTurn(t, h, "before the kill")
			tu.Signal(tu.CXPid(), syscall.SIGKILL)
			deadline := time.Now().Add(10 * time.Second)
			for Alive(codex) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if Alive(codex) {
				t.Fatalf("codex %d outlived its SIGKILLed cx", codex)
			}
			// A new cx starts and works normally afterwards.
			tu2, _ := startTurn(t, h, "after the kill")
			tu2.Slash("/exit")
			if code := tu2.WaitExit(30 * time.Second); code != 0 {
				t.Fatalf("second cx exit %d", code)
			}
			checkTerminal(t, tu2)
			if n := len(h.RolloutSessionIDs()); n != 2 {
				t.Fatalf("want 2 sessions, rollouts %v", h.Rollouts())
			}
			knownToCX(t, h)
			// The new cx recovered the first run's session as an orphan.
			states := committedOnce(t, h)
			orphans := 0
			for _, st := range states {
				if st.EndReason == "orphan" {
					orphans++
				}
			}
			if orphans != 1 {
				t.Fatalf("want one session ended as orphan: %+v", states)
			}
		})
	})
}

// Scenario 3: /new and /clear each start a session; every id is seen.
func TestScenarioNewClear(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu, _ := startTurn(t, h, "first session")
		tu.New()
		tu.Prompt("second session", "mock reply: second session")
		tu.NewThread("/clear")
		tu.Prompt("third session", "mock reply: third session")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d", code)
		}
		checkTerminal(t, tu)
		ids := h.RolloutSessionIDs()
		if len(ids) != 3 {
			t.Fatalf("want 3 sessions, rollouts %v", h.Rollouts())
		}
		var started []string
		for _, e := range h.HookEvents() {
			if e.Event == "SessionStart" {
				started = append(started, e.SessionID+"/"+e.Source)
			}
		}
		for _, id := range ids {
			if !slices.ContainsFunc(started, func(s string) bool { return strings.HasPrefix(s, id+"/") }) {
				t.Errorf("session %s had no SessionStart; starts %v", id, started)
			}
		}
		states := committedOnce(t, h)
		reasons := map[string]int{}
		for _, st := range states {
			reasons[st.EndReason]++
		}
		if reasons["new"] != 1 || reasons["clear"] != 1 {
			t.Fatalf("end reasons %v, want one new and one clear", reasons)
		}
	})
}

// Scenario 4: /compact then a turn.
func TestScenarioCompact(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu, _ := startTurn(t, h, "before compaction")
		tu.Type("/compact")
		tu.WaitFor(regexp.MustCompile(`(?i)compact`), 30*time.Second)
		tu.WaitReady()
		tu.Prompt("after compaction", "mock reply: after compaction")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d", code)
		}
		checkTerminal(t, tu)
		if len(h.RolloutSessionIDs()) != 1 {
			t.Fatalf("rollouts %v", h.Rollouts())
		}
		data, err := os.ReadFile(h.Rollouts()[0])
		if err != nil || !strings.Contains(string(data), `"compacted"`) {
			t.Fatalf("rollout holds no compaction (err %v)", err)
		}
		st := committedOnce(t, h)[h.RolloutSessionIDs()[0]]
		// PreCompact (0.169) ends the pre-compaction half as a generation of
		// its own; 0.128 fires no hook, so the session is one generation.
		want := 1
		if hasEvent(h.HookEvents(), "PreCompact") {
			want = 2
		}
		if st.Generation != want || st.TotalTurns != 2 {
			t.Fatalf("session %+v: want %d generations, 2 turns", st, want)
		}
	})
}

// Scenario 5: `codex resume <id>` through cx continues the same session.
func TestScenarioResume(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu, _ := startTurn(t, h, "to be resumed")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d", code)
		}
		ids := h.RolloutSessionIDs()
		if len(ids) != 1 {
			t.Fatalf("rollouts %v", h.Rollouts())
		}
		tu2 := h.StartTUI("resume", ids[0])
		tu2.WaitText("to be resumed", 60*time.Second)
		tu2.WaitReady()
		tu2.Prompt("resumed turn", "mock reply: resumed turn")
		tu2.Slash("/exit")
		if code := tu2.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("resumed cx exit %d", code)
		}
		checkTerminal(t, tu2)
		if got := h.RolloutSessionIDs(); len(got) != 1 || got[0] != ids[0] {
			t.Fatalf("resume made rollouts %v", got)
		}
		var resumed bool
		for _, e := range h.HookEvents() {
			resumed = resumed || (e.Event == "SessionStart" && e.Source == "resume" && e.SessionID == ids[0])
		}
		if !resumed {
			t.Fatalf("no SessionStart(resume) for %s: %v", ids[0], EventNames(h.HookEvents()))
		}
		// The resumed turn is the session's second generation.
		if st := committedOnce(t, h)[ids[0]]; st.Generation != 2 || st.TotalTurns != 2 {
			t.Fatalf("resumed session %+v, want generation 2 with 2 turns", st)
		}
	})
}

// Scenario 6: `codex exec` through cx (pipe mode): output and exit code as
// when Codex runs directly.
func TestScenarioExec(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		prompt := "exec prompt [[shell: echo exec-tool-ran]]"
		out, errOut, code := h.Exec("", "exec", prompt)
		dOut, _, dCode := h.Direct("", "exec", prompt)
		if code != 0 || code != dCode || out != dOut {
			t.Fatalf("through cx: code %d stdout %q (stderr %q); directly: code %d stdout %q", code, out, errOut, dCode, dOut)
		}
		if !strings.Contains(out, "mock: done (1 steps)") {
			t.Fatalf("stdout %q", out)
		}
		// A failing run fails the same way.
		_, _, code = h.Exec("", "exec", "[[error: 400]]")
		_, _, dCode = h.Direct("", "exec", "[[error: 400]]")
		if code != dCode || code == 0 {
			t.Fatalf("error run: through cx %d, directly %d", code, dCode)
		}
		if evs := h.HookEvents(); !hasEvent(evs, "Stop") {
			t.Fatalf("exec through cx fired no Stop: %v", EventNames(evs))
		}
		// Sessions of the direct runs are un-owned and may stay live until the
		// idle sweep; those run through cx are committed.
		states := h.Sessions()
		committed := 0
		for _, st := range states {
			if st.RunID != "" {
				if st.Status != "committed" || st.Commits != st.Generation {
					t.Errorf("exec session through cx: %+v", st)
				}
				committed++
			}
		}
		if committed != 2 {
			t.Fatalf("want 2 sessions run through cx, have %+v", states)
		}
	})
}

// Scenario 7: four cx+Codex at once on one CODEX_HOME, one killed.
func TestScenarioConcurrent(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		var tus []*TUI
		for i := 0; i < 4; i++ {
			tus = append(tus, h.StartTUI())
		}
		codex := make([]int, 4)
		for i, tu := range tus {
			tu.WaitReady()
			p := fmt.Sprintf("concurrent %d", i)
			tu.Prompt(p, "mock reply: "+p)
			codex[i] = tu.CodexPid()
		}
		tus[2].Signal(codex[2], syscall.SIGKILL)
		if code := tus[2].WaitExit(30 * time.Second); code != 137 {
			t.Fatalf("killed one: cx exit %d", code)
		}
		for i, tu := range tus {
			if i == 2 {
				continue
			}
			if !Alive(codex[i]) {
				t.Fatalf("codex %d died with its neighbour", i)
			}
			tu.Slash("/exit")
		}
		for i, tu := range tus {
			code := tu.WaitExit(30 * time.Second)
			if i != 2 && code != 0 {
				t.Fatalf("cx %d exit %d", i, code)
			}
			checkTerminal(t, tu)
		}
		if n := len(h.RolloutSessionIDs()); n != 4 {
			t.Fatalf("want 4 sessions, rollouts %v", h.Rollouts())
		}
		states := committedOnce(t, h)
		runs := map[string]bool{}
		killed := 0
		for _, st := range states {
			runs[st.RunID] = true
			if st.EndReason == "killed:KILL" {
				killed++
			}
		}
		if len(runs) != 4 || killed != 1 {
			t.Fatalf("want 4 runs and one killed session: %+v", states)
		}
	})
}

func TestDebugLedger(t *testing.T) {
	if os.Getenv("CX_DEBUG") == "" {
		t.Skip()
	}
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu, _ := startTurn(t, h, "first session")
		tu.New()
		tu.Prompt("second session", "mock reply: second session")
		tu.Slash("/exit")
		tu.WaitExit(30 * time.Second)
		t.Logf("%s", h.CXCtl("ctl", "sessions", "--json"))
		t.Logf("%s", h.CXCtl("ctl", "status"))
		for id := range h.Sessions() {
			t.Logf("%s", h.CXCtl("ctl", "show", id))
		}
		data, _ := os.ReadFile(filepath.Join(h.CXHome, "logs", "cx.log"))
		t.Logf("cx.log:\n%s", data)
	})
}

// sawTitleRequest waits for a helper request of Codex's own (0.169 asks
// the catalog model for a task title in a thread of its own); false when
// none came within d (0.128).
func sawTitleRequest(h *H, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, r := range h.Requests() {
			if strings.Contains(strings.ToLower(string(r.Body)), "task title") {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// waitHelperLogged waits until Codex's log database has rows for a thread
// that has no rollout — the helper — and returns its id: the moment the
// old log-database discovery took it for a session.
func waitHelperLogged(t *testing.T, h *H, d time.Duration) string {
	t.Helper()
	dbs, _ := filepath.Glob(filepath.Join(h.CodexHome, "logs_*.sqlite"))
	if len(dbs) == 0 {
		t.Fatalf("no logs_*.sqlite in %s", h.CodexHome)
	}
	db, err := sql.Open("sqlite", "file:"+dbs[len(dbs)-1]+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		rows, err := db.Query(`SELECT DISTINCT thread_id FROM logs WHERE thread_id IS NOT NULL AND thread_id != ''`)
		if err == nil {
			for rows.Next() {
				var id string
				if rows.Scan(&id) == nil && !slices.Contains(h.RolloutSessionIDs(), id) {
					rows.Close()
					return id
				}
			}
			rows.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Codex never logged a helper thread")
	return ""
}

// Codex's own helper threads are not sessions: with a catalog model, 0.169
// starts a title-generation thread per prompt; cx lists exactly the user's
// thread, even after Codex has logged the helper's rows.
func TestHelperThreadsAreNotSessions(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu, _ := startTurn(t, h, "a prompt that gets a title")
		helper := ""
		if sawTitleRequest(h, 10*time.Second) {
			helper = waitHelperLogged(t, h, 20*time.Second)
			time.Sleep(time.Second) // two discovery rounds while Codex still runs
		} else if in.Version == "0.169.0" {
			t.Fatalf("0.169 with %s sent no title request; requests: %d", Model, len(h.Requests()))
		}
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("cx exit %d", code)
		}
		states := committedOnce(t, h)
		if len(states) != 1 {
			t.Fatalf("cx lists %d sessions for one user thread (helper %q): %v", len(states), helper, states)
		}
	})
}

// Secrets a user types, a tool prints and the model says reach Codex's
// rollout, but nothing cx stores: every file under CX_HOME (ledger, logs,
// continuity, caches) is searched for each one after real runs.
func TestNoSecretAtRest(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		secrets := map[string]string{
			"prompt":    "sk-proj-PromptSecret0123456789abcdefXYZ",
			"tool":      "ghp_ToolOutputSecret0123456789abcdefghijklmn",
			"assistant": "sk-ant-api03-AssistantSecret0123456789abcdef",
			"argument":  "AKIAARGUMENTSECRET12",
		}
		// The prompt and a tool's output in one turn; the model's own words
		// in another; a secret as a command-line argument of the run.
		if _, errOut, code := h.Exec("", "exec", "use key "+secrets["prompt"]+" [[shell: echo token="+secrets["tool"]+"]]"); code != 0 {
			t.Fatalf("exec: %s", errOut)
		}
		if _, errOut, code := h.Exec("", "exec", "-c", "notify=[\""+secrets["argument"]+"\"]", "[[say: the key is "+secrets["assistant"]+"]]"); code != 0 {
			t.Fatalf("exec: %s", errOut)
		}
		// The secrets did reach Codex's own record (the test is not vacuous).
		var rollouts strings.Builder
		for _, p := range h.Rollouts() {
			b, _ := os.ReadFile(p)
			rollouts.Write(b)
		}
		for _, what := range []string{"prompt", "tool", "assistant"} {
			if !strings.Contains(rollouts.String(), secrets[what]) {
				t.Fatalf("the %s secret never reached the rollout", what)
			}
		}
		committedOnce(t, h)
		// Search (the recall index) finds the turns, never the secrets.
		if out := h.CXCtl("ctl", "search", "--all", "--json", "key"); !strings.Contains(out, `"turn": 1`) {
			t.Fatalf("search finds no archived turn:\n%s", out)
		}
		for what, s := range secrets {
			if out := h.CXCtl("ctl", "search", "--all", "--json", s); strings.Contains(out, s[len(s)-8:]+"»") || strings.Contains(out, `"session"`) {
				t.Errorf("search for the %s secret found:\n%s", what, out)
			}
		}
		_ = filepath.WalkDir(h.CXHome, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(p)
			for what, s := range secrets {
				if strings.Contains(string(b), s) {
					t.Errorf("the %s secret is stored in %s", what, p)
				}
			}
			return nil
		})
	})
}

// Ctrl+Z inside Codex under cx does what it does without cx: Codex stops,
// the terminal is the shell's again (its prompt, "Stopped"), and `fg`
// brings both back in raw mode at the terminal's size; the session goes
// on and ends with one commit.
func TestCtrlZSuspendsAndResumes(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		tu := h.StartInShell()
		tu.WaitReady()
		tu.Prompt("before suspending", "mock reply: before suspending")
		// Ctrl+Z between turns, as the test means: the one failure seen
		// (CI, loaded re-run, 0.128: no "Stopped" in 20 s) had a turn just
		// starting on a frozen screen after the reply, its cause not found.
		tu.WaitIdle()
		alternate := func() string {
			out, err := tu.tmux("display-message", "-p", "-t", "cx", "#{alternate_on}")
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(out)
		}
		onCodexScreen := alternate()
		codex := tu.CodexPid()
		tu.Keys("C-z")
		tu.WaitFor(regexp.MustCompile(`(?m)Stopped.*\n(.*\n)*cx-shell\$\s*$`), 20*time.Second)
		// The shell is on its own screen while Codex is stopped (Codex's
		// modes are left with it), and Codex is back on its own after fg.
		stoppedOff := func(how string) {
			if a := alternate(); a != "0" {
				t.Errorf("after %s the terminal is on the alternate screen (Codex's: %s)", how, onCodexScreen)
			}
		}
		resumed := func(how string) {
			tu.Type("fg")
			tu.WaitReady()
			if a := alternate(); a != onCodexScreen {
				t.Errorf("after fg (%s) alternate screen %s, Codex had %s", how, a, onCodexScreen)
			}
		}
		stoppedOff("Ctrl+Z")
		if st := procState(codex); st != "T" {
			t.Fatalf("Codex is %q after Ctrl+Z, want stopped; screen:\n%s", st, tu.Screen())
		}
		if st := procState(tu.CXPid()); st != "T" {
			t.Fatalf("cx is %q after Ctrl+Z, want stopped", st)
		}
		resumed("Ctrl+Z")
		tu.Prompt("after resuming", "mock reply: after resuming")
		// Suspended from outside (kill -TSTP cx): Codex is stopped without a
		// word, so cx leaves its modes for it, and brings them back on fg.
		tu.WaitIdle()
		cxPid := tu.CXPid()
		tu.Signal(cxPid, syscall.SIGTSTP)
		// Both stop at once (what cx does); the shell's report of it may
		// not be drawn until the shell next reads its terminal on a loaded
		// machine (seen at 2248d91 too): waited for, then asked for with an
		// Enter, as a person would.
		stopBy := time.Now().Add(20 * time.Second)
		for (procState(cxPid) != "T" || procState(codex) != "T") && time.Now().Before(stopBy) {
			time.Sleep(50 * time.Millisecond)
		}
		if st := procState(cxPid); st != "T" {
			t.Fatalf("cx is %q after kill -TSTP, want stopped; screen:\n%s", st, tu.Screen())
		}
		stoppedPrompt := regexp.MustCompile(`(?m)Stopped.*\n(.*\n)*cx-shell\$\s*$`)
		for i := 0; i < 20 && !stoppedPrompt.MatchString(tu.Screen()); i++ {
			time.Sleep(250 * time.Millisecond)
		}
		if !stoppedPrompt.MatchString(tu.Screen()) {
			t.Logf("cx and Codex stopped; the shell's report not drawn after 5 s: Enter")
			tu.Keys("Enter")
			for i := 0; i < 80 && !stoppedPrompt.MatchString(tu.Screen()); i++ {
				time.Sleep(250 * time.Millisecond)
			}
		}
		stoppedOff("kill -TSTP of cx")
		if !stoppedPrompt.MatchString(tu.Screen()) {
			// The shell has not reported the stop in 25 s (CI under load,
			// twice in many runs, cx and Codex both stopped and the terminal
			// off Codex's screen — what cx does): `fg` is typed all the same,
			// for the shell to read when it next reads its terminal.
			t.Logf("the shell did not report the stop in 25 s; fg typed all the same; screen:\n%s", tu.Screen())
		}
		resumed("kill -TSTP")
		tu.Prompt("after the second resume", "mock reply: after the second resume")
		cx := tu.CXPid()
		tu.Slash("/exit")
		deadline := time.Now().Add(30 * time.Second)
		for Alive(cx) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if Alive(cx) {
			t.Fatalf("cx still runs 30 s after /exit; screen:\n%s", tu.Screen())
		}
		// cx is gone: the shell has the terminal. Its prompt may share a row
		// with stale text (Codex, resumed after the shell printed lines,
		// redraws from where it had been and leaves rows uncleared: CI,
		// loaded re-run, 0.169), so the shell is asked for its status.
		tu.Type("echo fg-exit=$?")
		tu.WaitFor(regexp.MustCompile(`(?m)^fg-exit=0`), 10*time.Second)
		st := committedOnce(t, h)
		if len(st) != 1 {
			t.Fatalf("sessions %v", st)
		}
		for _, s := range st {
			if s.TotalTurns != 3 || s.Generation != 1 {
				t.Fatalf("session %+v, want one generation with the three turns", s)
			}
		}
	})
}

// procState is the one-letter state of pid ("S", "T", …), "" if gone.
func procState(pid int) string {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}

// CX_HOME on a full disk: Codex runs through cx as if nothing were wrong
// (exit 0, hooks answered), cx says the run is not recorded, and once
// there is space again the next sweep records and commits the session
// Codex wrote meanwhile — once, and at once.
func TestDiskFullNothingLost(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{})
		full := filepath.Join(h.Root, "full")
		if err := os.MkdirAll(full, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", full).CombinedOutput(); err != nil {
			codextest.Missing(t, fmt.Sprintf("cannot mount a tmpfs for a full disk (%v: %s)", err, out))
		}
		t.Cleanup(func() { _ = exec.Command("umount", "-l", full).Run() })
		h.CXHome = full
		filler := filepath.Join(full, "filler")
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 64<<10)
		for {
			if _, err := f.Write(chunk); err != nil {
				break // ENOSPC: the disk is full
			}
		}
		f.Close()

		out, errOut, code := h.Exec("", "exec", "a prompt while the disk is full")
		if code != 0 || !strings.Contains(out, "mock reply: a prompt while the disk is full") {
			t.Fatalf("exec on a full CX_HOME: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		if !strings.Contains(errOut, "not recorded") {
			t.Fatalf("no warning that the run is not recorded: %s", errOut)
		}
		if len(h.RolloutSessionIDs()) != 1 {
			t.Fatalf("rollouts %v", h.Rollouts())
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		// At once: the run that could not record has ended, and its
		// breadcrumb names the thread its Codex wrote — no active_window wait.
		if out := h.CXCtl("ctl", "sweep"); !strings.Contains(out, "recorded 1 session") {
			t.Fatalf("sweep after space came back: %s", out)
		}
		states := committedOnce(t, h)
		for _, st := range states {
			if st.EndReason != "recovered" || st.TotalTurns != 1 {
				t.Fatalf("recovered session %+v", st)
			}
		}
		h.CXCtl("ctl", "sweep")
		committedOnce(t, h)
		if out, _, _ := h.Exec("", "ctl", "doctor"); !strings.Contains(out, "recorded late from their rollouts") {
			t.Fatalf("doctor after recovery:\n%s", out)
		}
	})
}
