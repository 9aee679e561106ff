package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

func TestMain(m *testing.M) {
	if os.Getenv("CX_TEST_FAKE_CODEX") == "1" {
		os.Exit(fakeCodexMain(os.Args[1:]))
	}
	if f, ok := scriptCommands[filepath.Base(os.Args[0])]; ok {
		os.Exit(f())
	}
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

// fakeCodex writes a shell-script Codex into dir/name: --version and --help
// answer like the real one (with or without --no-daemon); anything else
// prints its arguments. Each run is logged to dir/calls.
func fakeCodex(t *testing.T, dir, name string, noDaemon bool) string {
	t.Helper()
	helpExtra := ""
	if noDaemon {
		helpExtra = "      --no-daemon\n          Run without the shared background server\n"
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$1" in
--version) echo "codex-cli 9.9.9"; exit 0 ;;
--help) cat <<'HELP'
Codex CLI

Commands:
  exec              Run Codex non-interactively [aliases: e]
  resume            Resume a previous interactive session
  fork              Fork a previous interactive session
  app-server        [experimental] Run the app server

Options:
  -c, --config <key=value>
          Override a configuration value
  -m, --model <MODEL>
          Model the agent should use
      --remote <ADDR>
          Connect the TUI to a remote app server endpoint.
%s  -h, --help
          Print help
HELP
exit 0 ;;
esac
echo "args: $*"
echo "managed: ${CODEX_MANAGED_BY_NPM:-} ${CODEX_MANAGED_PACKAGE_ROOT:-}"
echo "cxhome: ${CX_HOME:-}"
exit ${FAKE_EXIT:-0}
`, filepath.Join(dir, "calls"), helpExtra)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type cxResult struct {
	code           int
	stdout, stderr string
}

// runCX runs the built cx with env (added to a minimal base) and args, stdin
// not a terminal (pipe mode).
func runCX(t *testing.T, env []string, args ...string) cxResult {
	t.Helper()
	cmd := exec.Command(codextest.CX(t), args...)
	home := t.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "CX_HOME=" + filepath.Join(home, ".cx"), "PATH=/usr/bin:/bin"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("cx %v did not finish", args)
	}
	return cxResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// cx found as "codex" on PATH (a symlink, as with alias/symlink installs) is
// skipped; the real codex after it is run, with the args verbatim.
func TestResolveSkipsSelf(t *testing.T) {
	t.Parallel()
	self := t.TempDir()
	if err := os.Symlink(codextest.CX(t), filepath.Join(self, "codex")); err != nil {
		t.Fatal(err)
	}
	real := t.TempDir()
	fakeCodex(t, real, "codex", false)
	r := runCX(t, []string{"PATH=" + self + ":" + real + ":/usr/bin:/bin"}, "exec", "hello world", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "args: exec hello world --json") {
		t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	self := t.TempDir()
	if err := os.Symlink(codextest.CX(t), filepath.Join(self, "codex")); err != nil {
		t.Fatal(err)
	}
	r := runCX(t, []string{"PATH=" + self + ":/usr/bin:/bin"})
	if r.code != 127 {
		t.Fatalf("exit %d, want 127", r.code)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "cx: codex not found") {
		t.Fatalf("want one clear error line, got %q", r.stderr)
	}
	r = runCX(t, []string{"CX_CODEX_BIN=/nonexistent/codex"})
	if r.code != 127 || !strings.Contains(r.stderr, "/nonexistent/codex") {
		t.Fatalf("CX_CODEX_BIN missing: exit %d, stderr %q", r.code, r.stderr)
	}
	// There but not executable: 126, as a shell says it.
	plain := filepath.Join(self, "plain")
	if err := os.WriteFile(plain, []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCX(t, []string{"CX_CODEX_BIN=" + plain})
	if r.code != 126 || !strings.Contains(r.stderr, plain) {
		t.Fatalf("CX_CODEX_BIN not executable: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A copy of cx (not the same file) named codex on PATH would start itself
// forever; the second cx notices its parent is a cx and stops.
func TestLoopGuard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile(codextest.CX(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "codex"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin"}, "exec", "x")
	if r.code != 127 || !strings.Contains(r.stderr, "loop") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	onPath, fromEnv, fromCfg := t.TempDir(), t.TempDir(), t.TempDir()
	fakeCodex(t, onPath, "codex", false)
	envBin := fakeCodex(t, fromEnv, "codex", false)
	cfgBin := fakeCodex(t, fromCfg, "codex", false)
	cfgFile := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfgFile, []byte(fmt.Sprintf("[codex]\nbin = %q\n", cfgBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + onPath + ":/usr/bin:/bin"
	calls := func(dir string) int {
		data, _ := os.ReadFile(filepath.Join(dir, "calls"))
		return strings.Count(string(data), "exec x")
	}
	runCX(t, []string{path, "CX_CONFIG=" + cfgFile, "CX_CODEX_BIN=" + envBin}, "exec", "x")
	runCX(t, []string{path, "CX_CONFIG=" + cfgFile}, "exec", "x")
	runCX(t, []string{path}, "exec", "x")
	if calls(fromEnv) != 1 || calls(fromCfg) != 1 || calls(onPath) != 1 {
		t.Fatalf("runs: env %d, config %d, PATH %d; want 1 each", calls(fromEnv), calls(fromCfg), calls(onPath))
	}
}

func TestNoDaemonFlag(t *testing.T) {
	t.Parallel()
	with, without := t.TempDir(), t.TempDir()
	fakeCodex(t, with, "codex", true)
	fakeCodex(t, without, "codex", false)
	cases := []struct {
		dir  string
		args []string
		want bool
	}{
		{with, nil, true},
		{with, []string{"fix the bug"}, true},
		{with, []string{"-m", "gpt-5.5", "-c", "x=1", "fix"}, true},
		{with, []string{"resume", "abc"}, true},
		{with, []string{"fork", "--last"}, true},
		{with, []string{"-c", "exec=1"}, true}, // a flag value, not the subcommand
		{with, []string{"exec", "x"}, false},
		{with, []string{"e", "x"}, false},
		{with, []string{"app-server"}, false},
		{with, []string{"--remote", "ws://127.0.0.1:1"}, false},
		{with, []string{"resume", "--remote=unix://", "abc"}, false},
		{with, []string{"prompt", "--remote", "ws://x"}, false},
		{without, nil, false},
		{without, []string{"resume", "abc"}, false},
	}
	for _, c := range cases {
		r := runCX(t, []string{"PATH=" + c.dir + ":/usr/bin:/bin"}, c.args...)
		got := strings.Contains(r.stdout, "args: --no-daemon")
		if got != c.want {
			t.Errorf("%v (no-daemon capable %v): added %v, want %v; stdout %q", c.args, c.dir == with, got, c.want, r.stdout)
		}
		if want := "args: " + strings.TrimSpace(map[bool]string{true: "--no-daemon ", false: ""}[c.want]+strings.Join(c.args, " ")); !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("%v: args not verbatim: %q", c.args, r.stdout)
		}
	}
}

// The version is learned once per binary and cached: a warm start runs
// Codex only for the user's command.
func TestCapsCached(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", true)
	home := t.TempDir()
	env := []string{"PATH=" + dir + ":/usr/bin:/bin", "CX_HOME=" + home}
	for i := 0; i < 3; i++ {
		if r := runCX(t, env, "exec", "x"); r.code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if n := strings.Count(string(data), "--version"); n != 1 {
		t.Fatalf("--version ran %d times, want 1:\n%s", n, data)
	}
	// A changed binary is probed again.
	time.Sleep(10 * time.Millisecond)
	fakeCodex(t, dir, "codex", true)
	runCX(t, env, "exec", "x")
	data, _ = os.ReadFile(filepath.Join(dir, "calls"))
	if n := strings.Count(string(data), "--version"); n != 2 {
		t.Fatalf("--version ran %d times after the binary changed, want 2", n)
	}
}

func TestExitCodePassesThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", false)
	for _, code := range []int{0, 1, 3, 127, 255} {
		r := runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin", fmt.Sprintf("FAKE_EXIT=%d", code)}, "exec", "x")
		if r.code != code {
			t.Errorf("exit %d, want %d", r.code, code)
		}
	}
}

// npm's Node launcher is replaced by the native binary it would run, with
// the environment it would give it.
func TestNPMLauncherLayouts(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"packaged", "legacy"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			nm := filepath.Join(root, "node_modules")
			pkg := filepath.Join(nm, "@openai", "codex")
			mustWrite(t, filepath.Join(pkg, "package.json"), `{"name":"@openai/codex"}`, 0o644)
			mustWrite(t, filepath.Join(pkg, "bin", "codex.js"), "#!/usr/bin/env node\nconsole.log('node ran')\nprocess.exit(42)\n", 0o755)
			arch := filepath.Join(nm, "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl")
			native := filepath.Join(arch, "bin")
			if layout == "packaged" {
				mustWrite(t, filepath.Join(arch, "codex-package.json"), `{"layoutVersion":1,"entrypoint":"bin/codex"}`, 0o644)
			} else {
				native = filepath.Join(arch, "codex")
				if err := os.MkdirAll(filepath.Join(arch, "path"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(native, 0o755); err != nil {
				t.Fatal(err)
			}
			fakeCodex(t, native, "codex", false)
			bin := filepath.Join(nm, ".bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../@openai/codex/bin/codex.js", filepath.Join(bin, "codex")); err != nil {
				t.Fatal(err)
			}
			r := runCX(t, []string{"PATH=" + bin + ":/usr/bin:/bin"}, "exec", "x")
			if r.code != 0 || !strings.Contains(r.stdout, "args: exec x") || !strings.Contains(r.stdout, "managed: 1") {
				t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if layout == "packaged" && !strings.Contains(r.stdout, "managed: 1 "+pkg) {
				t.Fatalf("CODEX_MANAGED_PACKAGE_ROOT not set to the package: %q", r.stdout)
			}
		})
	}
}

func mustWrite(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

func TestCtl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", true)
	r := runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin"}, "ctl", "version", "--json")
	var v struct {
		Version      string `json:"version"`
		Codex        string `json:"codex"`
		CodexVersion string `json:"codex_version"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("ctl version --json: %v %+v", err, r)
	}
	if v.Version == "" || v.CodexVersion != "9.9.9" || v.Codex != filepath.Join(dir, "codex") {
		t.Fatalf("%+v", v)
	}
	if r := runCX(t, nil, "ctl", "nosuch"); r.code != 2 || !strings.Contains(r.stderr, "unknown command") {
		t.Fatalf("unknown ctl command: %+v", r)
	}
	if r := runCX(t, nil, "ctl"); r.code != 2 || !strings.Contains(r.stderr, "version") || r.stdout != "" { // a usage error: stderr
		t.Fatalf("bare ctl: %+v", r)
	}
}

func TestConfigWarningsAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fakeCodex(t, dir, "codex", false)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	mustWrite(t, cfg, "colour = \"blue\"\n[wrapper]\ngrace = \"3s\"\n", 0o600)
	r := runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfg}, "exec", "x")
	if r.code != 0 || !strings.Contains(r.stderr, `unknown key "colour"`) {
		t.Fatalf("unknown key: %+v", r)
	}
	mustWrite(t, cfg, "[wrapper]\ngrace = 5\n", 0o600)
	r = runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfg}, "exec", "x")
	// A value cx cannot use costs that value alone (its default is used),
	// never Codex's run nor its recording: one warning naming the line and
	// what to write (issue 52).
	if r.code != 0 || !strings.Contains(r.stdout, "args: exec x") || !strings.Contains(r.stderr, cfg) || !strings.Contains(r.stderr, "write e.g. `grace = \"5s\"`") ||
		strings.Contains(r.stderr, "not recorded") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("bad config: %+v", r)
	}
	// A file that is not TOML at all still costs the recording.
	mustWrite(t, cfg, "[wrapper\ngrace = 5\n", 0o600)
	r = runCX(t, []string{"PATH=" + dir + ":/usr/bin:/bin", "CX_CONFIG=" + cfg}, "exec", "x")
	if r.code != 0 || !strings.Contains(r.stdout, "args: exec x") || !strings.Contains(r.stderr, "not recorded") {
		t.Fatalf("unreadable config: %+v", r)
	}
}

// `cx ctl checkpoint --json` is a pure projection: same bytes whatever the
// cwd, clock zone or locale; it matches the checkpoint package's golden.
func TestCtlCheckpointPure(t *testing.T) {
	t.Parallel()
	rollout, _ := filepath.Abs("../../testdata/rollouts/0.128.0/tui-compact-interrupt.jsonl")
	want, err := os.ReadFile("../../internal/checkpoint/testdata/0.128.0/tui-compact-interrupt.checkpoint.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{{"TZ=UTC", "LANG=C"}, {"TZ=Asia/Tokyo", "LANG=de_DE.UTF-8", "LC_ALL=tr_TR.UTF-8"}} {
		cmd := exec.Command(codextest.CX(t), "ctl", "checkpoint", rollout, "--json")
		cmd.Dir = t.TempDir()
		cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}, env...)
		out, err := cmd.Output()
		if err != nil || !bytes.Equal(out, want) {
			t.Fatalf("env %v: err %v, output differs from golden:\n%s", env, err, out)
		}
	}
}
