// Package install tests scripts/install.sh, the installer a user without
// Go runs, against release archives served from 127.0.0.1: a good install,
// an upgrade in place, and every refusal (one line, nothing written).
package install

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// binaries are a release's programs: cx, its hook client and its MCP front.
type binaries struct{ cx, hook, mcp []byte }

// buildCX builds cx reporting version, and its hook client.
func buildCX(t *testing.T, version string) binaries {
	t.Helper()
	dir := t.TempDir()
	build := func(pkg, out string, ldflags string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
		cmd.Dir = root(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	return binaries{cx: build("./cmd/cx", filepath.Join(dir, "cx"), "-s -w -X main.version="+version),
		hook: build("./cmd/cx-hook", filepath.Join(dir, "cx-hook"), "-s -w"),
		mcp:  build("./cmd/cx-mcp", filepath.Join(dir, "cx-mcp"), "-s -w -X main.version="+version)}
}

// archive is a release archive as the release config lays it out: cx, its
// hook client and the README at its top.
func archive(t *testing.T, bin binaries) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"cx", 0o755, bin.cx}, {"cx-hook", 0o755, bin.hook}, {"cx-mcp", 0o755, bin.mcp}, {"README.md", 0o644, []byte("# cx\n")}, {"LICENSE-vectors", 0o644, []byte("the word vectors' licence\n")}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.data)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// release serves files from 127.0.0.1; they may be replaced between runs.
type release struct {
	mu    sync.Mutex
	files map[string][]byte
	srv   *httptest.Server
}

func newRelease(t *testing.T) *release {
	r := &release{files: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		data, ok := r.files[strings.TrimPrefix(req.URL.Path, "/")]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// publish makes archive the machine's release, with checksums.txt listing
// sums (nil: the archive's own).
func (r *release) publish(name string, archive []byte, sums []byte) {
	if sums == nil {
		sum := sha256.Sum256(archive)
		sums = fmt.Appendf(nil, "%s  %s\n%s  cx_plan9_amd64.tar.gz\n", hex.EncodeToString(sum[:]), name, strings.Repeat("0", 64))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files = map[string][]byte{name: archive, "checksums.txt": sums}
}

type result struct {
	code           int
	stdout, stderr string
}

// install runs the installer with dash (POSIX sh, no bash-isms) the way a
// user does: a HOME, a PATH without cx, the release's base URL.
func install(t *testing.T, r *release, home string, extra []string, args ...string) result {
	t.Helper()
	shell := "dash"
	if _, err := exec.LookPath(shell); err != nil {
		shell = "sh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, append([]string{filepath.Join(root(t), "scripts", "install.sh")}, args...)...)
	cmd.Env = append([]string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "CX_INSTALL_BASE_URL=" + r.srv.URL,
		"CX_HOME=" + filepath.Join(home, "cx-home"), "CODEX_HOME=" + filepath.Join(home, "codex"), "CX_CODEX_BIN=/nonexistent"}, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

func version(t *testing.T, cx string) string {
	t.Helper()
	out, err := exec.Command(cx, "ctl", "version").Output()
	if err != nil {
		t.Fatalf("%s ctl version: %v", cx, err)
	}
	return string(out)
}

func TestInstallScript(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the releases are for Linux and macOS")
	}
	name := fmt.Sprintf("cx_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH)
	first, second := archive(t, buildCX(t, "9.0.1-test")), archive(t, buildCX(t, "9.0.2-test"))
	r := newRelease(t)

	t.Run("install, then upgrade in place", func(t *testing.T) {
		home := t.TempDir()
		r.publish(name, first, nil)
		res := install(t, r, home, nil)
		cx := filepath.Join(home, ".local", "bin", "cx")
		if res.code != 0 || !strings.Contains(version(t, cx), "9.0.1-test") {
			t.Fatalf("install: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		for _, want := range []string{"cx installed: " + cx, "is not on your PATH", "export PATH=", "codex"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("the installer's output lacks %q (the PATH advice, then doctor):\n%s", want, res.stdout)
			}
		}
		r.publish(name, second, nil)
		if res := install(t, r, home, nil); res.code != 0 || !strings.Contains(version(t, cx), "9.0.2-test") {
			t.Fatalf("second run: exit %d, %s\n%s", res.code, version(t, cx), res.stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(home, ".local", "bin", ".cx*.new.*")); len(left) != 0 {
			t.Errorf("left behind: %v", left)
		}
		if fi, err := os.Stat(filepath.Join(home, ".local", "bin", "cx-hook")); err != nil || fi.Mode()&0o100 == 0 {
			t.Errorf("no executable cx-hook beside cx: %v", err)
		}
	})

	t.Run("a prefix", func(t *testing.T) {
		home, prefix := t.TempDir(), filepath.Join(t.TempDir(), "opt")
		r.publish(name, first, nil)
		if res := install(t, r, home, []string{"PATH=" + filepath.Join(prefix, "bin") + ":/usr/bin:/bin"}, "--prefix", prefix); res.code != 0 ||
			strings.Contains(res.stdout, "is not on your PATH") {
			t.Fatalf("--prefix: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		version(t, filepath.Join(prefix, "bin", "cx"))
	})

	corrupt := append([]byte(nil), first...)
	corrupt[len(corrupt)/2] ^= 0xff
	blocker := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(blocker, nil, 0o600)
	for _, c := range []struct {
		name    string
		archive []byte
		sums    []byte
		env     []string
		args    []string
		says    string
	}{
		{"a corrupted archive", corrupt, []byte(fmt.Sprintf("%x  %s\n", sha256.Sum256(first), name)), nil, nil, "does not match its checksum"},
		{"no checksum line", first, []byte(strings.Repeat("0", 64) + "  cx_plan9_amd64.tar.gz\n"), nil, nil, "no line for " + name},
		{"an unsupported architecture", first, nil, []string{"CX_INSTALL_ARCH=mips64"}, nil, "no cx release for"},
		{"an unsupported system", first, nil, []string{"CX_INSTALL_OS=FreeBSD"}, nil, "no cx release for FreeBSD"},
		{"a prefix that cannot be written", first, nil, nil, []string{"--prefix", filepath.Join(blocker, "opt")}, "cannot write to"},
		{"no release there", nil, []byte{}, []string{"CX_INSTALL_BASE_URL=http://127.0.0.1:9/none"}, nil, "cannot download"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			r.publish(name, c.archive, c.sums)
			res := install(t, r, home, c.env, c.args...)
			if res.code == 0 || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 || !strings.Contains(res.stderr, c.says) {
				t.Errorf("exit %d, stderr %q: want one line saying %q", res.code, res.stderr, c.says)
			}
			var written []string
			filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
				if err == nil && p != home {
					written = append(written, p)
				}
				return nil
			})
			if _, err := os.Stat(filepath.Join(blocker, "opt")); err == nil {
				written = append(written, filepath.Join(blocker, "opt"))
			}
			if len(written) != 0 {
				t.Errorf("written despite the refusal: %v", written)
			}
		})
	}
}

// cx through npm, the way Codex ships: the packages scripts/npm-packages.sh
// builds from release archives, installed globally into a prefix from the
// tarballs, offline; cx runs through npm's shim with its exit status, and
// without its platform package the shim names the package that is missing.
func TestNPMPackages(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm is not installed (scripts/install-test-deps.sh installs Node.js for the real Codex)")
		}
		t.Skip("npm is not installed")
	}
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if cpu == "" || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		t.Skip("no npm package is built for this platform")
	}
	dist, out := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dist, fmt.Sprintf("cx_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH)), archive(t, buildCX(t, "9.1.0-test+abc")), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	npmEnv := append(os.Environ(), "npm_config_cache="+filepath.Join(t.TempDir(), "npm-cache"), "npm_config_update_notifier=false")
	run := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = npmEnv
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if b, err := run("bash", filepath.Join(root(t), "scripts", "npm-packages.sh"), dist, out, "9.1.0-test+abc"); err != nil {
		t.Fatalf("npm-packages.sh: %v\n%s", err, b)
	}
	main := filepath.Join(out, "cx-cli-cx-9.1.0-test.tgz")
	native := filepath.Join(out, fmt.Sprintf("cx-cli-cx-%s-%s-9.1.0-test.tgz", runtime.GOOS, cpu))
	for _, f := range []string{main, native} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("not packed: %v", err)
		}
	}
	install := func(tarballs ...string) string {
		prefix := t.TempDir()
		if b, err := run("npm", append([]string{"install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund"}, tarballs...)...); err != nil {
			t.Fatalf("npm install: %v\n%s", err, b)
		}
		return filepath.Join(prefix, "bin", "cx")
	}
	cxEnv := []string{"CX_HOME=" + filepath.Join(t.TempDir(), "cx-home"), "CX_CODEX_BIN=/nonexistent", "PATH=" + os.Getenv("PATH")}
	cx := install(main, native)
	// The native package holds the hook client beside its cx, where cx ctl
	// install finds it.
	if hooks, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(cx)), "lib", "node_modules", "@cx-cli", "*", "bin", "cx-hook")); len(hooks) != 1 {
		t.Errorf("the npm packages put %d cx-hook beside cx, want 1", len(hooks))
	}
	cmd := exec.Command(cx, "ctl", "version")
	cmd.Env = cxEnv
	if b, err := cmd.Output(); err != nil || !strings.Contains(string(b), "9.1.0-test+abc") {
		t.Fatalf("cx ctl version through npm's shim: %v\n%s", err, b)
	}
	cmd = exec.Command(cx, "ctl", "no-such-command")
	cmd.Env = cxEnv
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("a usage error through the shim: %v (exit %d), want cx's exit status 2", err, cmd.ProcessState.ExitCode())
	}
	cx = install(main)
	cmd = exec.Command(cx, "ctl", "version")
	cmd.Env = cxEnv
	b, err := cmd.CombinedOutput()
	want := fmt.Sprintf("the package @cx-cli/cx-%s-%s", runtime.GOOS, cpu)
	if err == nil || !strings.Contains(string(b), want) || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
		t.Errorf("without the platform package: %v, %q: want one line naming %s", err, b, want)
	}
}
