package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/testing/codextest"
)

// The real Codex CLI through cx: `--version` prints the same bytes and exits
// with the same code as Codex run directly, and npm's launcher on PATH
// resolves to the native binary.
func TestRealCodexVersion(t *testing.T) {
	t.Parallel()
	for _, in := range codextest.Installs(t) {
		t.Run(in.Version, func(t *testing.T) {
			t.Parallel()
			direct := exec.Command(in.Native, "--version")
			var want bytes.Buffer
			direct.Stdout = &want
			if err := direct.Run(); err != nil {
				t.Fatalf("codex --version directly: %v", err)
			}
			path := "PATH=" + filepath.Dir(in.Launcher) + ":/usr/bin:/bin"
			r := runCX(t, []string{path}, "--version")
			if r.code != direct.ProcessState.ExitCode() || r.stdout != want.String() {
				t.Fatalf("through cx: code %d stdout %q; directly: code %d stdout %q (stderr %q)",
					r.code, r.stdout, direct.ProcessState.ExitCode(), want.String(), r.stderr)
			}
			if !strings.Contains(r.stdout, "codex-cli "+in.Version) {
				t.Fatalf("unexpected version output %q", r.stdout)
			}
			r = runCX(t, []string{path}, "ctl", "version", "--json")
			var v struct {
				Codex        string `json:"codex"`
				CodexVersion string `json:"codex_version"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
				t.Fatalf("ctl version --json: %v (%q)", err, r.stdout)
			}
			if v.Codex != in.Native || v.CodexVersion != in.Version {
				t.Fatalf("launcher resolved to %q (%s), want native %q (%s)", v.Codex, v.CodexVersion, in.Native, in.Version)
			}
		})
	}
}
