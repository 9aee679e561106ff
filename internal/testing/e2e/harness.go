// Package e2e runs the real Codex CLI through cx against the mock model:
// an isolated CODEX_HOME per test (outside /tmp) with the mock provider, a
// trusted git project and cx's hooks (trusted through Codex's own
// app-server), a tmux-driven terminal for the interactive TUI, and pipe-mode
// runs for `codex exec`. Tests collect exit status, terminal state, hook
// events, rollout files and cx's state.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/readmodel"
	"cx/internal/testing/codextest"
	"cx/internal/testing/mockmodel"
)

// Model is the model name the harness configures: one for which Codex
// offers apply_patch and update_plan.
const Model = "gpt-5.5"

// Options adjust a harness.
type Options struct {
	Script  mockmodel.Script // nil: mockmodel.Directives
	NoHooks bool             // do not install cx's hooks
}

// H is one isolated environment: a mock model, a CODEX_HOME, a project and a CX_HOME.
type H struct {
	T         testing.TB
	Codex     codextest.Install
	CX        string
	Root      string
	CodexHome string
	Work      string
	CXHome    string
	Model     *mockmodel.Server
	// ExtraEnv is added to every process's environment (Env).
	ExtraEnv []string
}

// New builds an environment for one Codex version.
func New(t testing.TB, in codextest.Install, opts Options) *H {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	base = filepath.Join(base, "cx-test", "e2e")
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	// Short names: tmux's socket path must stay under the 108-byte limit.
	root, err := os.MkdirTemp(base, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(root, "TEST"), []byte(t.Name()+"\n"), 0o600)
	h := &H{T: t, Codex: in, CX: codextest.CX(t), Root: root,
		CodexHome: filepath.Join(root, "codex-home"), Work: filepath.Join(root, "project"), CXHome: filepath.Join(root, "cx-home")}
	t.Cleanup(func() {
		// A background sweeper a hook started last may still be at work:
		// it would write its logs into the folder once removed.
		for _, pid := range cxOf(filepath.Join(root, "cx-home")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !Keep(t) {
			_ = os.RemoveAll(root)
		} else {
			t.Logf("kept %s", root)
		}
	})
	for _, d := range []string{h.CodexHome, h.Work, h.home()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.Model, err = mockmodel.Start(Model, opts.Script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Model.Close() })
	h.initProject()
	h.writeConfig()
	if !opts.NoHooks {
		h.InstallHooks()
	}
	return h
}

func (h *H) initProject() {
	h.T.Helper()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = h.Work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			h.T.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(h.Work, "README.md"), []byte("# demo project\n"), 0o644); err != nil {
		h.T.Fatal(err)
	}
	run("init", "-q", "-b", "main")
	run("add", ".")
	run("commit", "-q", "-m", "init")
}

// CodexConfigKey adds a top-level key line to Codex's config.toml (before
// its tables, where a top-level key must be).
func (h *H) CodexConfigKey(line string) {
	h.T.Helper()
	path := filepath.Join(h.CodexHome, "config.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		h.T.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte(line+"\n"), data...), 0o600); err != nil {
		h.T.Fatal(err)
	}
}

func (h *H) writeConfig() {
	h.T.Helper()
	cfg := fmt.Sprintf(`model = %q
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.mock]
name = "mock"
base_url = %q
wire_api = "responses"
env_key = "CX_TEST_MOCK_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects.%q]
trust_level = "trusted"

[analytics]
enabled = false

[tools.update_plan]
enabled = true

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"

[tui.model_availability_nux]
"gpt-6.1-sol" = 1
`, Model, h.Model.URL, h.Work)
	if err := os.WriteFile(filepath.Join(h.CodexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		h.T.Fatal(err)
	}
}

// InstallHooks installs cx's hooks the way a user does: `cx ctl install`
// (hooks.json, and trust through Codex's app-server where Codex needs it).
func (h *H) InstallHooks() {
	h.T.Helper()
	out, errOut, code := h.run(h.CX, "", "ctl", "install")
	if code != 0 {
		h.T.Fatalf("cx ctl install: exit %d\n%s%s", code, out, errOut)
	}
}

// Env is the environment cx and Codex run with.
func (h *H) Env() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "CODEX_HOME", k == "CX_HOME", k == "CX_CONFIG", k == "CX_SINKS", k == "TMUX", k == "HOME",
			strings.HasPrefix(k, "CX_RUN"), k == "CX_SUPERVISOR_PID", k == "CX_CODEX_BIN":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env,
		// A home of the test's own: Codex's tool shells are login shells,
		// and a machine's profile (a version manager rehashing under a lock
		// that a killed shell leaves behind) is not what these tests test.
		"HOME="+h.home(),
		"CODEX_HOME="+h.CodexHome,
		"CX_HOME="+h.CXHome,
		"CX_CODEX_BIN="+h.Codex.Launcher,
		"CX_TEST_MOCK_KEY=mock",
		"TERM=xterm-256color",
		// Codex outlives no cx by the lifeline alone, as on macOS: Linux's
		// parent-death signal is off.
		"CX_TEST_OFF=pdeathsig",
	), h.ExtraEnv...)
}

// home is the HOME cx and Codex run with.
func (h *H) home() string { return filepath.Join(h.Root, "home") }

// Exec runs cx with args in pipe mode (stdin from stdinData, or /dev/null),
// in the project directory.
func (h *H) Exec(stdinData string, args ...string) (stdout, stderr string, code int) {
	h.T.Helper()
	return h.run(h.CX, stdinData, args...)
}

// Direct runs the same Codex without cx, for comparisons.
func (h *H) Direct(stdinData string, args ...string) (stdout, stderr string, code int) {
	h.T.Helper()
	return h.run(h.Codex.Native, stdinData, args...)
}

func (h *H) run(bin, stdinData string, args ...string) (string, string, int) {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = h.Work
	cmd.Env = h.Env()
	if stdinData != "" {
		cmd.Stdin = strings.NewReader(stdinData)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		h.T.Fatalf("%s %v timed out; stderr:\n%s", bin, args, errb.String())
	}
	if err != nil && cmd.ProcessState == nil {
		h.T.Fatalf("%s %v: %v", bin, args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// Rollouts lists the rollout files under CODEX_HOME/sessions, sorted.
func (h *H) Rollouts() []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(h.CodexHome, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "rollout-") && strings.HasSuffix(d.Name(), ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// RolloutSessionIDs are the session ids named by the rollout files.
func (h *H) RolloutSessionIDs() []string {
	var ids []string
	for _, p := range h.Rollouts() {
		if id := rolloutID(p); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// HookEvent is one hook invocation cx recorded.
type HookEvent struct {
	Event     string `json:"event"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Source    string `json:"source"`
	TurnID    string `json:"turn_id"`
	AgentID   string `json:"agent_id"`      // a subagent's event
	Context   int    `json:"context_chars"` // context given back
}

// HookEvents returns the hook events cx's handler recorded, in order.
func (h *H) HookEvents() []HookEvent {
	f, err := os.Open(filepath.Join(h.CXHome, "logs", "hook-events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []HookEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e HookEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		out = append(out, e)
	}
	return out
}

// EventNames is the sequence of hook event names, for messages.
func EventNames(evs []HookEvent) []string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Event)
	}
	return s
}

// Requests returns what reached the model.
func (h *H) Requests() []mockmodel.Request { return h.Model.Requests() }

// SessionState is one entry of `cx ctl sessions --json`.
type SessionState = readmodel.SessionView

// Sessions is what cx's ledger says about every session.
func (h *H) Sessions() map[string]SessionState {
	h.T.Helper()
	out, errOut, code := h.run(h.CX, "", "ctl", "sessions", "--json")
	if code != 0 {
		h.T.Fatalf("cx ctl sessions: exit %d: %s", code, errOut)
	}
	var list []SessionState
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		h.T.Fatalf("cx ctl sessions --json: %v\n%s", err, out)
	}
	m := map[string]SessionState{}
	for _, s := range list {
		m[s.ID] = s
	}
	return m
}

// CX runs `cx args…` (a ctl command) and returns its stdout.
func (h *H) CXCtl(args ...string) string {
	h.T.Helper()
	out, errOut, code := h.run(h.CX, "", args...)
	if code != 0 {
		h.T.Fatalf("cx %v: exit %d: %s", args, code, errOut)
	}
	return out
}

var rolloutIDRE = regexp.MustCompile(`([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// rolloutID is the session id a rollout's file name ends with ("" if none).
func rolloutID(path string) string {
	if m := rolloutIDRE.FindStringSubmatch(path); m != nil {
		return m[1]
	}
	return ""
}

// cxOf is the processes whose environment names cxHome as CX_HOME: the cx
// processes (and their children) of one test's harness.
func cxOf(cxHome string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if bytes.Contains(environ, []byte("CX_HOME="+cxHome+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Keep reports whether a test's folders stay after it: CX_TEST_KEEP=1
// keeps a failed test's, =always every test's (to read a passing chaos
// run's logs).
func Keep(t testing.TB) bool {
	v := os.Getenv("CX_TEST_KEEP")
	return v == "always" || (v != "" && t.Failed())
}
