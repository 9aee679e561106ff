// Package codextest finds the real Codex CLI binaries that
// scripts/install-codex.sh installed, and builds the cx binary for tests
// that run it as a real process; and it holds what the benchmarks share
// (a percentile in milliseconds, a /proc status field) and what tests of
// cx as a process share (AwaitWatchman).
//
// A test that needs real Codex skips when it is absent — except under
// CI=true, where absence is a failure, so CI can never pass by skipping.
package codextest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Install is one installed Codex version.
type Install struct {
	Version  string // "0.169.0"
	Native   string // the native binary
	Launcher string // npm's Node launcher (node_modules/.bin/codex)
}

// ManifestPath is where install-codex.sh lists what it installed.
func ManifestPath() string {
	if p := os.Getenv("CX_TEST_CODEX_MANIFEST"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "cx-test", "codex", "manifest")
}

// Installs returns every installed version; it skips the test when none is
// installed (fails under CI=true).
func Installs(t testing.TB) []Install {
	t.Helper()
	var out []Install
	f, err := os.Open(ManifestPath())
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) != 3 {
				continue
			}
			if _, err := os.Stat(fs[1]); err != nil {
				continue
			}
			out = append(out, Install{Version: fs[0], Native: fs[1], Launcher: fs[2]})
		}
	}
	if len(out) == 0 {
		Missing(t, "no real Codex CLI installed (run scripts/install-codex.sh; manifest "+ManifestPath()+")")
	}
	// Every pinned version must be there: a test must not pass on fewer.
	for _, v := range PinnedVersions() {
		found := false
		for _, in := range out {
			found = found || in.Version == v
		}
		if !found {
			Missing(t, "Codex "+v+" is not installed (run scripts/install-codex.sh)")
		}
	}
	return out
}

// PinnedVersions are the Codex versions the tests run against
// (CX_TEST_CODEX_VERSIONS, as for scripts/install-codex.sh).
func PinnedVersions() []string {
	if v := os.Getenv("CX_TEST_CODEX_VERSIONS"); v != "" {
		return strings.Fields(v)
	}
	return []string{"0.171.0", "0.128.0"}
}

// Missing skips the test, or fails it under CI=true.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: %s", why)
	}
	t.Skip(why)
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// CX builds ./cmd/cx once per test binary, and its hook client
// ./cmd/cx-hook and MCP front ./cmd/cx-mcp beside it as a release installs
// them (static, without cgo, as .goreleaser.yaml builds them: a cgo build
// is linked against libc, and each of its processes starts through the
// dynamic loader), and returns cx's path.
func CX(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cx-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "cx")
		buildOut, buildErr = goBuild(buildPath, "./cmd/cx")
		// The hook client and the MCP front, with cx's version (the front
		// answers the MCP handshake in cx's name).
		for _, name := range []string{"cx-hook", "cx-mcp"} {
			if buildErr != nil {
				break
			}
			buildOut, buildErr = goBuild(filepath.Join(dir, name), "./cmd/"+name)
		}
	})
	if buildErr != nil {
		t.Fatalf("build cx: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}

// goBuild builds pkg to out as a release does (CGO_ENABLED=0), with
// -buildvcs=true — the version cx reports comes from the checkout, even
// where GOFLAGS turns VCS stamping off — and, where git cannot tell (no
// checkout, another owner), without it.
func goBuild(out, pkg string) ([]byte, error) {
	var b []byte
	var err error
	for _, flags := range [][]string{{"-buildvcs=true"}, nil} {
		cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, pkg)...)
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err = cmd.CombinedOutput(); err == nil {
			return b, nil
		}
	}
	return b, err
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// RemoveBuilt deletes the cx binary CX built; call it from TestMain.
func RemoveBuilt() {
	if buildPath != "" {
		_ = os.RemoveAll(filepath.Dir(buildPath))
	}
}

// AwaitWatchman waits until cx (or a supervisor) with the given pid runs
// its watchman, the guard of a pipe-mode child started watchmanDelay after
// it: a test that SIGKILLs cx sooner tests Linux's parent-death signal,
// not the guard macOS has.
func AwaitWatchman(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := exec.Command("pgrep", "-P", strconv.Itoa(pid), "-f", "cx-watchman").Output()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no watchman below pid %d within 10s", pid)
}

// WriteBigRollout writes a real-shaped Codex 0.169 rollout of at least
// size bytes to w: the recorded turns of a real session (testdata, found
// from the module root) repeated, each copy with its own ids — streamed,
// so a 1 GB one costs no memory.
func WriteBigRollout(tb testing.TB, w io.Writer, size int64) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(), "testdata", "rollouts", "0.169.0", "tui-compact-interrupt.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	i := bytes.IndexByte(data, '\n')
	head, body := data[:i+1], data[i+1:]
	bw := bufio.NewWriterSize(w, 1<<20)
	n, _ := bw.Write(head)
	for c, written := 0, int64(n); written < size; c++ {
		m, _ := bw.Write(bytes.ReplaceAll(body, []byte("01a200e2-"), []byte(fmt.Sprintf("%08x-", c))))
		written += int64(m)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// IsolatedEnv is this process's environment without cx's and Codex's
// variables, with CX_HOME home, and CODEX_HOME and HOME in root: a test's
// cx processes see only the homes the test made.
func IsolatedEnv(root, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "CX_") && k != "CODEX_HOME" {
			env = append(env, kv)
		}
	}
	return append(env, "CX_HOME="+home, "CODEX_HOME="+filepath.Join(root, "codex"), "HOME="+root)
}
