package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/hookcfg"
	"cx/internal/codex"
	"cx/internal/testing/codextest"
)

// A newcomer's path on a fresh CODEX_HOME: doctor says what is missing,
// `cx ctl install` fixes it (no review screen: the hooks fire in a real
// session), a moved cx binary is noticed and repaired, and uninstall takes
// everything back out.
func TestInstallDoctorUninstall(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{NoHooks: true})
		cfgBefore, _ := os.ReadFile(filepath.Join(h.CodexHome, "config.toml"))
		out, _, code := h.Exec("", "ctl", "doctor")
		if code == 0 || !strings.Contains(out, "lacks cx's") {
			t.Fatalf("doctor on a fresh home: exit %d\n%s", code, out)
		}
		// install then uninstall: config.toml is byte for byte what it was
		// (Codex's own trust write adds a [hooks.state] table), and keeps the
		// mode the user gave it (Codex's own writers write 0600).
		cfgPath := filepath.Join(h.CodexHome, "config.toml")
		if err := os.Chmod(cfgPath, 0o644); err != nil {
			t.Fatal(err)
		}
		mode := func() os.FileMode { fi, _ := os.Stat(cfgPath); return fi.Mode().Perm() }
		h.CXCtl("ctl", "install")
		if m := mode(); m != 0o644 {
			t.Errorf("config.toml's mode after install: %o, want 644", m)
		}
		h.CXCtl("ctl", "uninstall")
		if m := mode(); m != 0o644 {
			t.Errorf("config.toml's mode after uninstall: %o, want 644", m)
		}
		if out := h.CXCtl("ctl", "uninstall"); !strings.Contains(out, "nothing to remove") {
			t.Errorf("a second uninstall says:\n%s", out)
		}
		if cfg, _ := os.ReadFile(cfgPath); string(cfg) != string(cfgBefore) {
			t.Fatalf("config.toml after install and uninstall is not what it was:\n--- before\n%s\n--- after\n%s", cfgBefore, cfg)
		}
		if _, err := os.Stat(filepath.Join(h.CodexHome, "hooks.json")); err == nil {
			t.Fatal("install then uninstall left a hooks.json")
		}
		h.CXCtl("ctl", "install")
		if out := h.CXCtl("ctl", "doctor"); !strings.Contains(out, "hooks firing") {
			t.Fatalf("doctor after install:\n%s", out)
		}
		tu := h.StartTUI()
		tu.WaitReady()
		tu.Prompt("after install", "mock reply: after install")
		tu.Slash("/exit")
		if code := tu.WaitExit(30 * time.Second); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if !hasEvent(h.HookEvents(), "Stop") || strings.Contains(tu.Screen(), "need review") {
			t.Fatalf("hooks did not fire after install: %v", EventNames(h.HookEvents()))
		}
		committedOnce(t, h)

		// cx moved: its hooks now name a binary that is not this one.
		moved := filepath.Join(h.Root, "bin", "cx")
		os.MkdirAll(filepath.Dir(moved), 0o755)
		// Copied by cp, not written here: a fork of this test binary (a
		// parallel test starting a process) could inherit the write
		// descriptor for a moment, and executing the copy then fails with
		// "text file busy" (CI, loaded re-run, 0.169).
		if out, err := exec.Command("cp", h.CX, moved).CombinedOutput(); err != nil {
			t.Fatalf("copy cx: %v %s", err, out)
		}
		out, _, code = h.run(moved, "", "ctl", "doctor")
		if code == 0 || !strings.Contains(out, "another cx binary") {
			t.Fatalf("doctor with a moved cx: exit %d\n%s", code, out)
		}
		if out, errOut, code := h.run(moved, "", "ctl", "install"); code != 0 {
			t.Fatalf("repair install: %s %s", out, errOut)
		}
		if out, errOut, code := h.run(moved, "", "ctl", "doctor"); code != 0 {
			t.Fatalf("doctor after repair: %s %s", out, errOut)
		}

		if out, errOut, code := h.run(moved, "", "ctl", "uninstall"); code != 0 {
			t.Fatalf("uninstall: %s %s", out, errOut)
		}
		if _, err := os.Stat(filepath.Join(h.CodexHome, "hooks.json")); err == nil {
			got, _ := os.ReadFile(filepath.Join(h.CodexHome, "hooks.json"))
			t.Fatalf("uninstall left hooks.json:\n%s", got)
		}
		cfgAfter, _ := os.ReadFile(filepath.Join(h.CodexHome, "config.toml"))
		if strings.Contains(string(cfgAfter), "hooks.json:") {
			t.Fatalf("trust entries left in config.toml:\n%s", cfgAfter)
		}
		// Codex's TUI wrote its own keys meanwhile; none of cx's is left.
		if strings.Contains(string(cfgAfter), "[hooks.state]") || strings.Contains(string(cfgAfter), "[hooks]") {
			t.Fatalf("an empty hooks table left in config.toml:\n%s", cfgAfter)
		}
	})
}

// The README's path for a newcomer, on a fresh CODEX_HOME and CX_HOME:
// `go install ./cmd/cx`, `cx ctl install`, a first run, `cx ctl doctor`.
func TestReadmeNewcomer(t *testing.T) {
	eachCodex(t, func(t *testing.T, in codextest.Install) {
		h := New(t, in, Options{NoHooks: true})
		gobin := filepath.Join(h.Root, "gobin")
		cmd := exec.Command("go", "install", "./cmd/cx")
		cmd.Dir = moduleRoot(t)
		cmd.Env = append(os.Environ(), "GOBIN="+gobin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install ./cmd/cx: %v\n%s", err, out)
		}
		h.CX = filepath.Join(gobin, "cx")
		h.CXCtl("ctl", "install")
		if out, _, code := h.Exec("", "exec", "hello from a newcomer"); code != 0 || !strings.Contains(out, "mock reply: hello from a newcomer") {
			t.Fatalf("first run: %d %q", code, out)
		}
		committedOnce(t, h)
		if out := h.CXCtl("ctl", "doctor"); !strings.Contains(out, "hooks firing") || strings.Contains(out, "FAIL") {
			t.Fatalf("doctor:\n%s", out)
		}
	})
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Uninstall shifts the positional trust key of a hook added after cx's:
// that hook stays trusted (re-recorded under its new key).
func TestUninstallKeepsShiftedTrust(t *testing.T) {
	for _, in := range codextest.Installs(t) {
		if !(codex.Caps{Version: in.Version}).HasHookTrust() {
			continue
		}
		t.Run(in.Version, func(t *testing.T) {
			h := New(t, in, Options{}) // cx installed: its Stop group is first
			hooksPath, data, _, end := cxStopGroup(t, h)
			// Another tool appends its own Stop hook after cx's.
			other := `{"hooks": [{"type": "command", "command": "true # other-tool", "timeout": 5}]}`
			data = []byte(string(data[:end]) + ",\n      " + other + string(data[end:]))
			if err := os.WriteFile(hooksPath, data, 0o600); err != nil {
				t.Fatal(err)
			}
			trustOther := func() (string, string) {
				list := codexHooks(t, h, in, "other-tool")
				for _, hk := range list {
					if strings.Contains(hk.Command, "other-tool") {
						return hk.Key, hk.TrustStatus
					}
				}
				t.Fatalf("other hook not listed: %+v", list)
				return "", ""
			}
			keyBefore, _ := trustOther()
			if _, status := trustOther(); status != "trusted" {
				t.Fatalf("other hook not trusted before uninstall: %s", status)
			}
			h.CXCtl("ctl", "uninstall")
			list := codexHooks(t, h, in, "")
			found := false
			for _, hk := range list {
				if strings.Contains(hk.Command, "other-tool") {
					found = true
					if hk.Key == keyBefore || hk.TrustStatus != "trusted" {
						t.Fatalf("after uninstall: key %s (was %s), %s", hk.Key, keyBefore, hk.TrustStatus)
					}
				}
				if strings.Contains(hk.Command, " ctl hook ") {
					t.Fatalf("cx hook left: %+v", hk)
				}
			}
			if !found {
				t.Fatal("the other tool's hook was removed")
			}
		})
	}
}

// An install that finds two entries of cx's for one event (two installs
// from two paths) keeps one; the hook after the one taken out, its
// positional trust key shifted, stays trusted, and cx's own is trusted.
func TestInstallKeepsOneEntryAndShiftedTrust(t *testing.T) {
	for _, in := range codextest.Installs(t) {
		if !(codex.Caps{Version: in.Version}).HasHookTrust() {
			continue
		}
		t.Run(in.Version, func(t *testing.T) {
			h := New(t, in, Options{}) // cx installed: its Stop group is first
			// Before cx's Stop group, an older install's from another path;
			// after it, another tool's hook.
			hooksPath, data, start, end := cxStopGroup(t, h)
			older := `{"hooks": [{"type": "command", "command": "exec '/old/place/cx' ctl hook Stop", "timeout": 30}]},` + "\n      "
			otherHook := `{"hooks": [{"type": "command", "command": "true # other-tool", "timeout": 5}]}`
			data = []byte(string(data[:start]) + older + string(data[start:end]) + ",\n      " + otherHook + string(data[end:]))
			if err := os.WriteFile(hooksPath, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var keyBefore string
			for _, hk := range codexHooks(t, h, in, "other-tool") {
				if strings.Contains(hk.Command, "other-tool") {
					keyBefore = hk.Key
				}
			}
			h.CXCtl("ctl", "install")
			hooks := codexHooks(t, h, in, "")
			stops, other := 0, false
			for _, hk := range hooks {
				switch {
				case strings.Contains(hk.Command, "other-tool"):
					other = true
					if hk.Key == keyBefore || hk.TrustStatus != "trusted" {
						t.Errorf("the other tool's hook after install: key %s (was %s), %s", hk.Key, keyBefore, hk.TrustStatus)
					}
				case codex.EventName(hk.EventName) == "Stop" && strings.Contains(hk.Command, "cx"):
					stops++
					if hk.Command != hookcfg.Command(h.CX, "Stop") || hk.TrustStatus != "trusted" {
						t.Errorf("cx's Stop hook after install: %q, %s", hk.Command, hk.TrustStatus)
					}
				}
			}
			if stops != 1 || !other {
				t.Fatalf("after install: %d Stop hooks of cx's (want 1), the other tool's there: %v\n%+v", stops, other, hooks)
			}
		})
	}
}

// codexHooks is the hooks Codex's app-server lists for h's work folder, as
// listed; those whose command holds trust (none for "") it then trusts.
func codexHooks(t *testing.T, h *H, in codextest.Install, trust string) []codex.Hook {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := codex.Start(ctx, in.Native, h.Env())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ListHooks(ctx, h.Work)
	if err != nil {
		t.Fatal(err)
	}
	for _, hk := range list {
		if trust != "" && strings.Contains(hk.Command, trust) && hk.TrustStatus != "trusted" {
			if err := c.Trust(ctx, []codex.Hook{hk}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return list
}

// cxStopGroup is h's hooks.json, its path, and where in it the group of
// cx's Stop handler (as cx ctl install wrote it) starts and ends.
func cxStopGroup(t *testing.T, h *H) (path string, data []byte, start, end int) {
	t.Helper()
	path = filepath.Join(h.CodexHome, "hooks.json")
	data, _ = os.ReadFile(path)
	cmd, _ := json.Marshal(hookcfg.Command(h.CX, "Stop"))
	i := strings.Index(string(data), `"command": `+string(cmd)+`,`)
	start = strings.LastIndex(string(data[:max(i, 0)]), "{\n        \"hooks\"")
	if i < 0 || start < 0 {
		t.Fatalf("no Stop entry of cx's in:\n%s", data)
	}
	end = i + strings.Index(string(data[i:]), "]\n      }") + len("]\n      }")
	return path, data, start, end
}
