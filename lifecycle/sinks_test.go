package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/testing/codextest"
	"cx/internal/testing/ovfake"
)

// ovEnv is a cx environment whose sessions go to a fake OpenViking server
// in api_key mode (client timeout 500 ms; the server may act on a request
// up to 1.5 s after cx stopped waiting for it).
func ovEnv(t *testing.T, opts ovfake.Options, extra ...string) (*env, *ovfake.Server) {
	t.Helper()
	opts.APIKey = "k-123"
	ov, err := ovfake.StartWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ov.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("sinks = [\"local\", \"openviking\"]\n[openviking]\nurl = \""+ov.URL+"\"\ntimeout = \"500ms\"\nserver_hold = \"1500ms\"\n"+
		"api_key_env = \"CX_TEST_OV_KEY\"\npeer = \"dev-box\"\n[lifecycle]\nmax_attempts = 8\n"), 0o600)
	// An account and user the user keeps for OpenViking (as ovcli.conf
	// often does): an api_key server refuses them as headers.
	e := newEnv(t, append([]string{"CX_CONFIG=" + cfg, "CX_TEST_OV_KEY=k-123", "CX_TEST_BACKOFF=10ms", "HOME=" + t.TempDir(),
		"OPENVIKING_ACCOUNT=acme", "OPENVIKING_USER=ana"}, extra...)...)
	return e, ov
}

type ovMessage struct {
	Role   string `json:"role"`
	PeerID string `json:"peer_id"`
	TurnID string `json:"turn_id"`
	Parts  []struct {
		Type       string `json:"type"`
		Text       string `json:"text"`
		ToolStatus string `json:"tool_status"`
	} `json:"parts"`
}

func decode(raw []json.RawMessage) []ovMessage {
	out := make([]ovMessage, len(raw))
	for i, m := range raw {
		json.Unmarshal(m, &out[i])
	}
	return out
}

// userTexts returns the user texts a server stored for a session, in order.
func userTexts(ov *ovfake.Server, id string) []string { return ov.UserTexts("cx-" + id) }

func texts(ms []ovMessage) []string {
	var out []string
	for _, m := range ms {
		if m.Role == "user" && len(m.Parts) > 0 && m.Parts[0].Type == "text" {
			out = append(out, m.Parts[0].Text)
		}
	}
	return out
}

// storedOnce checks the server stored each of the session's turns once, in
// order, each archive holding its own generation's turns, every message
// with the peer, nothing outside the server's contract, and no commit of
// the server's own.
func storedOnce(t *testing.T, ov *ovfake.Server, id string, perArchive ...string) {
	t.Helper()
	s, ok := ov.Session("cx-" + id)
	if !ok {
		t.Fatalf("no session cx-%s on the server", id)
	}
	msgs := decode(s.Messages)
	if got, want := strings.Join(texts(msgs), ","), strings.Join(perArchive, ","); got != want {
		t.Fatalf("server stored user turns %q, want %q (each once)", got, want)
	}
	if turns := len(strings.Split(strings.Join(perArchive, ","), ",")); len(msgs) != 2*turns {
		t.Fatalf("server stored %d messages, want %d (a user and an assistant message per turn)", len(msgs), 2*turns)
	}
	if s.Commits != len(perArchive) || len(s.Archives) != len(perArchive) {
		t.Fatalf("server made %d archives (%d with messages), want %d", len(s.Archives), s.Commits, len(perArchive))
	}
	for i, a := range s.Archives {
		raw := make([]json.RawMessage, len(a.Messages))
		for j, m := range a.Messages {
			raw[j] = m.Raw
		}
		if got := strings.Join(texts(decode(raw)), ","); got != perArchive[i] {
			t.Fatalf("archive %d holds %q, want %q", a.Index, got, perArchive[i])
		}
	}
	for _, m := range msgs {
		if m.PeerID != "dev-box" || m.TurnID == "" {
			t.Fatalf("message without the peer or turn id: %+v", m)
		}
	}
	if v := ov.Violations(); len(v) > 0 {
		t.Fatalf("outside the server's contract: %v", v)
	}
	if s.ServerCommits != 0 || s.AutoCommit != 0 {
		t.Fatalf("the server committed by itself (%d) or kept its auto-commit (%d)", s.ServerCommits, s.AutoCommit)
	}
}

// acceptedEach checks cx recorded each generation's OpenViking commit as
// accepted by the server — not skipped by a second commit that found
// nothing left after a first whose answer was lost.
func acceptedEach(t *testing.T, e *env, id string, gens int) {
	t.Helper()
	db := e.db()
	for g := 1; g <= gens; g++ {
		c, err := db.SinkCommit(t.Context(), id, "openviking", g)
		if err != nil || c.State != "accepted" {
			t.Fatalf("generation %d's OpenViking commit recorded as %+v (%v), want accepted", g, c, err)
		}
	}
}

// settle sweeps until the session is committed again (a fault's retries,
// the server's hold after an unanswered request, backoffs).
func settle(t *testing.T, e *env, id string, gen int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, ok := e.sessions()[id]
		if ok && st.Status == "committed" && st.Generation == gen && st.Commits == gen {
			return
		}
		if time.Now().After(deadline) {
			out, _ := e.ctl("status")
			t.Fatalf("session %s not committed at generation %d: %+v\n%s", id, gen, st, out)
		}
		e.ctl("retry", "--all") // a fault that parked a job in a quick loop of retries
		e.ctl("sweep")
		time.Sleep(100 * time.Millisecond)
	}
}

func TestOpenVikingHappyPath(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	e.run("start A; hook SessionStart A startup; turn A one; turn A two; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	storedOnce(t, ov, "A", "one,two")
	for _, r := range ov.Requests() {
		if r.Path == "/health" {
			continue
		}
		if r.Header.Get("Authorization") != "Bearer k-123" || r.Header.Get("X-API-Key") != "k-123" {
			t.Fatalf("request without the API key: %s %s", r.Method, r.Path)
		}
		if r.Header.Get("X-OpenViking-Account") != "" || r.Header.Get("X-OpenViking-User") != "" {
			t.Fatalf("identity headers to an api_key server: %s %s", r.Method, r.Path)
		}
		if r.Header.Get("X-OpenViking-Actor-Peer") != "" {
			t.Fatalf("the peer header, which session routes ignore: %s %s", r.Method, r.Path)
		}
		if strings.Contains(string(r.Body), "k-123") {
			t.Fatal("the API key leaked into a body")
		}
	}
}

// A thread whose first generation ended with no turn (a daemon killed
// before the first turn reached the rollout), resumed later: its first
// generation has nothing to commit, so it holds back no later commit.
// Found by the chaos run (seed 688373, Codex 0.169).
func TestOpenVikingEmptyGenerationHoldsNothingBack(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	e.run("start A; hook SessionStart A startup; exit 0")
	e.want("A", "empty", "exit", 1, 0)
	e.run("start A; hook SessionStart A resume; turn A one; exit 0")
	waitFor(t, "generation 2 committed", func() bool {
		e.ctl("sweep")
		st := e.sessions()["A"]
		return st.Status == "committed" && st.Generation == 2 && st.Commits == 1
	})
	storedOnce(t, ov, "A", "one")
}

// Stop appends the new turns while the session is live; the end commits.
func TestOpenVikingAppendsOnStop(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A one; turn A two; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "turns on the server while live", func() bool { return len(userTexts(ov, "A")) == 2 })
	if s, _ := ov.Session("cx-A"); s.Commits != 0 {
		t.Fatal("committed while live")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	runWait(cmd, 30*time.Second)
	e.want("A", "committed", "signal:TERM", 1, 1)
	storedOnce(t, ov, "A", "one,two")
}

// Exactly once against the server's own contract: generation 1 committed
// and generation 2 resumed, with every fault on appends and on commits, in
// the first and in the later generation. The server resets its live count
// at each commit and has no idempotency, so a lost answer is resolved from
// its total and commit counters.
func TestOpenVikingExactlyOnceFaults(t *testing.T) {
	t.Parallel()
	faults := []struct {
		name  string
		fault ovfake.Fault
	}{
		{"lost answer", ovfake.Fault{Status: 500, AfterWork: true}},
		{"dropped connection after the work", ovfake.Fault{Drop: true}},
		{"timeout after the work", ovfake.Fault{Delay: 900 * time.Millisecond}},
		{"session lock held past the timeout", ovfake.Fault{Stall: 900 * time.Millisecond}},
		{"409 retryable", ovfake.Fault{Status: 409, Retryable: true}},
		{"503", ovfake.Fault{Status: 503, Count: 2}},
		{"500 before the work", ovfake.Fault{Status: 500}},
	}
	for _, f := range faults {
		for _, route := range []string{"/messages", "/commit"} {
			for _, gen := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s on %s in generation %d", f.name, route, gen), func(t *testing.T) {
					t.Parallel()
					e, ov := ovEnv(t, ovfake.Options{})
					fault := f.fault
					fault.Route = route
					if gen == 1 {
						ov.Inject(fault)
					}
					e.run("start A; hook SessionStart A startup; turn A one; exit 0")
					settle(t, e, "A", 1)
					if gen == 2 {
						ov.Inject(fault)
					}
					e.run("start A; hook SessionStart A resume; turn A two; exit 0")
					settle(t, e, "A", 2)
					storedOnce(t, ov, "A", "one", "two")
					acceptedEach(t, e, "A", 2)
					if n := ov.Unused(); n != 0 {
						t.Fatalf("%d fault(s) never applied", n)
					}
				})
			}
		}
	}
}

// A crash at each step of sending — before a request, after its answer
// before cx recorded it — on appends and commits, in the first and the
// later generation: the sweep finishes with each turn and each commit
// stored once.
func TestOpenVikingCrashAtEachStep(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"sending", "sent", "committing", "committed"} {
		for _, gen := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s in generation %d", point, gen), func(t *testing.T) {
				t.Parallel()
				e, ov := ovEnv(t, ovfake.Options{}, "CX_TEST_LEASE=1s")
				crash := func(g int) []string {
					if g == gen {
						return []string{"CX_TEST_CRASH_AT=" + point}
					}
					return nil
				}
				e.run("start A; hook SessionStart A startup; turn A one; exit 0", crash(1)...)
				settle(t, e, "A", 1)
				e.run("start A; hook SessionStart A resume; turn A two; exit 0", crash(2)...)
				settle(t, e, "A", 2)
				storedOnce(t, ov, "A", "one", "two")
				acceptedEach(t, e, "A", 2)
			})
		}
	}
}

// A legacy server (no total_message_count, no batch route, no per-session
// auto-commit): the live count, reset by each commit, is still read right.
func TestOpenVikingLegacyServer(t *testing.T) {
	t.Parallel()
	for _, route := range []string{"/messages", "/commit"} {
		t.Run("lost answer on "+route, func(t *testing.T) {
			t.Parallel()
			e, ov := ovEnv(t, ovfake.Options{Legacy: true})
			e.run("start A; hook SessionStart A startup; turn A one; exit 0")
			settle(t, e, "A", 1)
			ov.Inject(ovfake.Fault{Route: route, Status: 500, AfterWork: true})
			e.run("start A; hook SessionStart A resume; turn A two; exit 0")
			settle(t, e, "A", 2)
			storedOnce(t, ov, "A", "one", "two")
		})
	}
}

// A server whose sessions auto-commit by default: cx turns it off for its
// session before the first message, so every archive is one of cx's.
func TestOpenVikingAutoCommitTurnedOff(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{AutoCommitAfter: 1})
	e.run("start A; hook SessionStart A startup; turn A one; exit 0")
	settle(t, e, "A", 1)
	e.run("start A; hook SessionStart A resume; turn A two; exit 0")
	settle(t, e, "A", 2)
	storedOnce(t, ov, "A", "one", "two")
}

// A session the server auto-commits (an admin turned it on after cx's
// first contact): the server's commit is reported, not taken for cx's.
func TestOpenVikingServerCommitReported(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	e.run("start A; hook SessionStart A startup; turn A one; exit 0")
	settle(t, e, "A", 1)
	ov.SetAutoCommit("cx-A", 2)
	e.run("start A; hook SessionStart A resume; turn A two; exit 0")
	settle(t, e, "A", 2)
	ov.Settle(10 * time.Second) // the server's background phase
	e.run("start A; hook SessionStart A resume; turn A three; exit 0")
	settle(t, e, "A", 3)
	if got := strings.Join(userTexts(ov, "A"), ","); got != "one,two,three" {
		t.Fatalf("server stored %q", got)
	}
	out, _ := e.ctl("show", "A")
	log, _ := os.ReadFile(filepath.Join(e.cxHome, "logs", "cx.log"))
	if !strings.Contains(string(log), "the server committed the session by itself") {
		t.Fatalf("the server's own commit is not reported:\n%s\n%s", out, log)
	}
}

// With the OpenViking Codex plugin capturing the same sessions, the sink
// is refused (parked, with the choice in its error) until the user chooses.
func TestOpenVikingRefusedWithPlugin(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	hooks, _ := os.ReadFile(filepath.Join(e.codexHome, "hooks.json"))
	var hf map[string]map[string][]any
	json.Unmarshal(hooks, &hf)
	hf["hooks"]["Stop"] = append(hf["hooks"]["Stop"], map[string]any{"hooks": []any{map[string]any{"type": "command",
		"command": "cat >/dev/null; echo '{}' # node /opt/openviking/examples/codex-memory-plugin/scripts/auto-capture.mjs", "timeout": 45}}})
	data, _ := json.Marshal(hf)
	os.WriteFile(filepath.Join(e.codexHome, "hooks.json"), data, 0o600)
	e.run("start A; hook SessionStart A startup; turn A one; exit 0")
	waitFor(t, "the parked job", func() bool {
		out, _ := e.ctl("status")
		return strings.Contains(out, "parked jobs: ") && strings.Contains(out, "OpenViking Codex plugin is active")
	})
	if len(userTexts(ov, "A")) != 0 {
		t.Fatal("the sink wrote while the plugin captures the same session")
	}
	// The user's choice: the plugin's capture off in the environment cx
	// (and so Codex and the plugin) runs with.
	e.extra = append(e.extra, "OPENVIKING_AUTO_CAPTURE=false")
	e.ctl("retry", "--all")
	settle(t, e, "A", 1)
	storedOnce(t, ov, "A", "one")
}

// The exec sink: the session-end JSON, field by field.
func TestExecSink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "payload.json")
	script := filepath.Join(dir, "sink.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncat > "+out+"\n"), 0o755)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("sinks = [\"exec\"]\n[exec]\ncommand = [\""+script+"\"]\ntimeout = \"5s\"\n[lifecycle]\nmax_attempts = 3\n"), 0o600)
	e := newEnv(t, "CX_CONFIG="+cfg)
	e.run("start A; hook SessionStart A startup; turn A work; exit 5")
	e.want("A", "committed", "exit", 1, 1)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	st := e.sessions()["A"]
	want := map[string]any{"session_id": "A", "hook_event_name": "SessionEnd", "reason": "other", "end_reason": "exit",
		"generation": float64(1), "run_id": st.RunID, "exit_status": float64(5), "cwd": e.w}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	if tp, _ := p["transcript_path"].(string); !strings.HasSuffix(tp, "-A.jsonl") {
		t.Errorf("transcript_path %v", p["transcript_path"])
	}
	// A failing command is retried, then parked with its error.
	os.WriteFile(script, []byte("#!/bin/sh\necho broken >&2\nexit 3\n"), 0o755)
	e2 := newEnv(t, "CX_CONFIG="+cfg, "CX_TEST_BACKOFF=10ms")
	e2.run("start B; hook SessionStart B startup; turn B work; exit 0")
	for i := 0; i < 25; i++ {
		time.Sleep(20 * time.Millisecond)
		e2.ctl("sweep")
	}
	status, _ := e2.ctl("status")
	if !strings.Contains(status, "parked jobs: 1") || !strings.Contains(status, "broken") {
		t.Fatalf("status:\n%s", status)
	}
}

// An exec sink's command that succeeds while another process holds the
// ledger past its busy timeout is recorded done once the lock goes, not
// run again when its lease ends: the 3-minute chaos run's exec repeats
// were each a success cx could not record (CX_HOME full, the ledger
// locked). Without the wait, the sweep after the lease runs it again.
func TestExecSuccessOutlastsLockedLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls, ready, locked := filepath.Join(dir, "calls"), filepath.Join(dir, "ready"), filepath.Join(dir, "locked")
	// The command does its work, then waits until the ledger is held to
	// exit, so cx goes to record its success into the lock.
	e := execEnv(t, dir, fmt.Sprintf("cat >/dev/null\necho call >> %q\n: > %q\nwhile [ ! -e %q ]; do sleep 0.05; done\n", calls, ready, locked), "[lifecycle]\nexit_budget = \"20s\"\n")
	held := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				held <- fmt.Errorf("the exec sink never ran")
				return
			}
		}
		release, err := codextest.HoldLedger(e.cxHome)
		if err != nil {
			held <- err
			return
		}
		os.WriteFile(locked, nil, 0o600)
		// Held until recording the success has met the lock and waits.
		e.waitLog("trying again")
		release()
		held <- nil
	}()
	e.run("start A; hook SessionStart A startup; turn A work; exit 0")
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	deliveredOnce(t, e, "A", calls)
}

// execEnv is an environment whose one sink is exec, running a shell
// script with body; config is added to cx's config.
func execEnv(t *testing.T, dir, body, config string) *env {
	t.Helper()
	script := filepath.Join(dir, "sink.sh")
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("sinks = [\"exec\"]\n[exec]\ncommand = [\""+script+"\"]\ntimeout = \"20s\"\n"+config), 0o600); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, "CX_CONFIG="+cfg)
}

// deliveredOnce checks that session id's one generation, ended by its
// run's exit, is committed and reached the exec sink once (a line "call"
// in calls), after a sweep that finds any lease long over.
func deliveredOnce(t *testing.T, e *env, id, calls string) {
	t.Helper()
	e.ctlLater(3*time.Hour, "sweep")
	e.want(id, "committed", "exit", 1, 1)
	if data, _ := os.ReadFile(calls); strings.Count(string(data), "call") != 1 {
		t.Fatalf("the exec sink delivered %d times, want once", strings.Count(string(data), "call"))
	}
}

// A sink command that the work of a run's start left running is stopped
// with the run, not left to outlive cx: it finished after its job's lease
// had passed to a sweep, which ran it again (the 3-minute chaos run, seed
// 777, 0.128: an exec repeat no fault explained — a hanging command
// started by a short run's start, logged a minute later).
func TestStartWorkStoppedWithTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls, started, mode := filepath.Join(dir, "calls"), filepath.Join(dir, "started"), filepath.Join(dir, "mode")
	e := execEnv(t, dir, fmt.Sprintf("echo $$ > %q\ncase \"$(cat %q)\" in fail) exit 1 ;; slow) sleep 4 ;; esac\ncat >/dev/null\necho call >> %q\n", started, mode, calls), "")
	// A first run whose job fails: it waits in the outbox.
	os.WriteFile(mode, []byte("fail"), 0o600)
	e.run("start A; hook SessionStart A startup; turn A work; exit 0")
	os.WriteFile(mode, []byte("slow"), 0o600)
	os.Remove(started)
	// A second, short run, an hour on (the job's backoff over): its start
	// takes the job and runs the slow command; Codex exits while the
	// command still runs.
	cmd := e.cxCmd("sleep 1500; exit 0", "CX_TEST_CLOCK=1h")
	if err := runTimeout(cmd, 60*time.Second); err != nil {
		t.Fatalf("cx: %v", err)
	}
	data, err := os.ReadFile(started)
	if err != nil {
		t.Fatal("the second run's start never ran the job")
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	waitFor(t, "the sink command gone", func() bool { return syscall.Kill(pid, 0) != nil })
	deliveredOnce(t, e, "A", calls)
}

// A resume after a commit is given the server's archive overview — a
// real-sized one (~1,000 words) that a 2,000-token budget would drop once
// the session holds live messages — cut to cx's budget, pointing at the
// archive the commit made.
func TestOpenVikingOverviewOnResume(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{})
	e.run("start A; hook SessionStart A startup; turn A design the cache; exit 0")
	e.want("A", "committed", "exit", 1, 1)
	// Live messages on the server (another client's) spend the budget first.
	body := `{"role":"user","content":"` + strings.Repeat("long question ", 600) + `"}`
	req, _ := http.NewRequest("POST", ov.URL+"/api/v1/sessions/cx-A/messages", strings.NewReader(body))
	req.Header.Set("X-API-Key", "k-123")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("add a live message: %v %v", resp, err)
	}
	waitFor(t, "the overview", func() bool {
		s, _ := ov.Session("cx-A")
		return len(s.Archives) == 1 && s.Archives[0].Done && s.Live == 1
	})
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	out, _ := e.hook("SessionStart", map[string]any{"session_id": "A", "hook_event_name": "SessionStart", "source": "resume", "cwd": e.w, "transcript_path": rollouts[0]})
	var ans struct {
		Out struct {
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal([]byte(out), &ans)
	s, _ := ov.Session("cx-A")
	if !strings.Contains(ans.Out.Context, "**Overview**: archive_001") || !strings.Contains(ans.Out.Context, s.Archives[0].URI) {
		t.Fatalf("resume context lacks the OpenViking overview or its archive %s:\n%s", s.Archives[0].URI, out)
	}
	if len(ans.Out.Context) > 6000+200 {
		t.Fatalf("the injection is %d chars, over [inject] max_chars", len(ans.Out.Context))
	}
	var asked bool
	for _, r := range ov.Requests() {
		asked = asked || strings.Contains(r.Path, "/context?token_budget=32000")
	}
	if !asked {
		t.Fatal("the overview was not asked with the large budget")
	}
}

// `cx ctl retry` after a backend comes back does not wait out a backoff
// grown long in the outage: the jobs waiting are due now, and done.
func TestRetryMakesBackoffDue(t *testing.T) {
	t.Parallel()
	e, ov := ovEnv(t, ovfake.Options{}, "CX_TEST_BACKOFF=1h")
	ov.Down()
	// No hook host while the server is down: one that leased the job and
	// was slow to send it (both cores busy) sent it once the server was
	// up, and the backoff was never waited out (committed before it; once
	// a job parked instead, unexplained, in a run of the whole package).
	unlock, err := e.holdSweeper()
	if err != nil {
		t.Fatal(err)
	}
	// Its hooks answered in their own process at once, not after a second
	// each waiting for a host the held place will never start.
	e.run("start A; hook SessionStart A startup; turn A one; exit 0", hookwire.HostEnv+"=off")
	unlock()
	if err := ov.Up(); err != nil {
		t.Fatal(err)
	}
	e.ctl("sweep")
	if st := e.sessions()["A"]; st.Status == "committed" {
		t.Fatalf("committed before its backoff ran out: %+v", st)
	}
	out, code := e.ctl("retry", "--all")
	if code != 0 || !regexp.MustCompile(`^0 parked job\(s\) back in the outbox, [1-9]\d* waiting out a backoff due now\n$`).MatchString(out) {
		t.Fatalf("retry: %d %q", code, out)
	}
	e.want("A", "committed", "exit", 1, 1)
	storedOnce(t, ov, "A", "one")
}

// A stop signal that reaches cx while its exit works the outbox (an
// impatient Ctrl+C, a daemon's second SIGTERM) stops that work — the sink
// command killed and waited for, its job left for later — and cx exits
// with Codex's status. It killed cx outright (its signal handling was
// over), and the command it had started ran on and was done again by the
// next worker (the 20-minute chaos run: five exec repeats, each a command
// logged a minute after its cx was SIGTERMed).
func TestSignalDuringExitStopsItsSinkCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	calls, started := filepath.Join(dir, "calls"), filepath.Join(dir, "started")
	e := execEnv(t, dir, fmt.Sprintf("echo $$ $PPID > %q.new && mv %q.new %q\nsleep 4\ncat >/dev/null\necho call >> %q\n", started, started, started, calls), "[lifecycle]\nexit_budget = \"30s\"\n")
	// The background sweeper a hook starts must not take the job first.
	unlock, err := e.holdSweeper()
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.cxCmd("start A; hook SessionStart A startup; turn A work; exit 3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exit's sink command", func() bool { _, err := os.Stat(started); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = runWait(cmd, 10*time.Second)
	unlock()
	if cmd.ProcessState == nil {
		t.Fatalf("cx: %v", err)
	}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 3 {
		t.Fatalf("cx ended %v, want Codex's status 3", cmd.ProcessState)
	}
	data, _ := os.ReadFile(started)
	var pid, ppid int
	fmt.Sscan(string(data), &pid, &ppid)
	if ppid != cmd.Process.Pid {
		t.Fatalf("the sink command's parent is %d, not cx (%d)", ppid, cmd.Process.Pid)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("the sink command (pid %d) outlived cx", pid)
	}
	os.WriteFile(filepath.Join(dir, "sink.sh"), []byte(fmt.Sprintf("#!/bin/sh\ncat >/dev/null\necho call >> %q\n", calls)), 0o755)
	deliveredOnce(t, e, "A", calls)
}
