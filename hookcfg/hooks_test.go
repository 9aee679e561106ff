package hookcfg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

const cxPath = "/opt/cx/bin/cx"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Golden merges: cx's entries after everything already there, every other
// byte kept; merging again changes nothing; removal gives the input back.
func TestMergeGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/merge/*.json")
	for _, f := range append(files, "absent") {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, _ := os.ReadFile(f) // "absent": no file
			out, changed, err := Merge(f, in, cxPath)
			if name == "corrupted" {
				var pe *ParseError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), f) {
					t.Fatalf("corrupted file: err %v, want a ParseError naming the file", err)
				}
				return
			}
			if err != nil || !changed {
				t.Fatalf("merge: changed %v err %v", changed, err)
			}
			if !json.Valid(out) {
				t.Fatalf("merged file is not JSON:\n%s", out)
			}
			golden(t, name+".json", out)
			again, changed2, err := Merge(f, out, cxPath)
			if err != nil || changed2 || !bytes.Equal(again, out) {
				t.Fatalf("second merge changed the file (err %v)", err)
			}
			// Every event cx installs is there, with cx's command.
			var doc struct {
				Hooks map[string][]struct {
					Hooks []struct{ Command string } `json:"hooks"`
				} `json:"hooks"`
			}
			json.Unmarshal(out, &doc)
			for _, e := range Entries {
				ok := false
				for _, g := range doc.Hooks[e.Event] {
					for _, h := range g.Hooks {
						ok = ok || h.Command == Command(cxPath, e.Event)
					}
				}
				if !ok {
					t.Errorf("no cx entry for %s", e.Event)
				}
			}
			// One handler of cx's an event, whatever was there before.
			for _, e := range Entries {
				n := 0
				for _, g := range doc.Hooks[e.Event] {
					for _, h := range g.Hooks {
						if isOurs(h.Command, e.Event, cxPath) {
							n++
						}
					}
				}
				if n != 1 {
					t.Errorf("%s: %d handlers of cx's, want 1", e.Event, n)
				}
			}
			if len(in) == 0 || name == "empty-object" || name == "installed-elsewhere" || name == "installed-twice" {
				return
			}
			created := map[string]bool{}
			var orig struct {
				Hooks map[string]json.RawMessage `json:"hooks"`
			}
			json.Unmarshal(in, &orig)
			for _, e := range Entries {
				if _, ok := orig.Hooks[e.Event]; !ok {
					created[e.Event] = true
				}
			}
			back, _, err := Remove(f, out, cxPath, func(ev string) bool { return created[ev] })
			if err != nil || !bytes.Equal(back, in) {
				t.Fatalf("removal did not restore the original (err %v):\n%s\n---\n%s", err, back, in)
			}
		})
	}
}

// The installer round trip: install, install again (nothing changes),
// uninstall → the original bytes (or no file), with a backup kept.
func TestInstallerRoundTrip(t *testing.T) {
	for _, src := range []string{"", "others.json", "compact.json", "empty-object.json"} {
		home := t.TempDir()
		in := &Installer{CodexHome: home, CXPath: cxPath, StateDir: filepath.Join(t.TempDir(), "install")}
		var orig []byte
		if src != "" {
			orig, _ = os.ReadFile(filepath.Join("testdata/merge", src))
			os.WriteFile(in.HooksPath(), orig, 0o640)
		}
		ctx := context.Background()
		if res, err := in.Install(ctx); err != nil || !res.Changed {
			t.Fatalf("%s: install %v %v", src, res, err)
		}
		if src != "" {
			if bak, _ := os.ReadFile(in.HooksPath() + ".bak"); !bytes.Equal(bak, orig) {
				t.Fatalf("%s: no backup of the original", src)
			}
			if fi, _ := os.Stat(in.HooksPath()); fi.Mode().Perm() != 0o640 {
				t.Fatalf("%s: mode changed to %v", src, fi.Mode().Perm())
			}
		}
		if res, err := in.Install(ctx); err != nil || res.Changed {
			t.Fatalf("%s: second install changed something (%v)", src, err)
		}
		if _, err := in.Uninstall(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(in.HooksPath())
		if src == "" {
			if err == nil {
				t.Fatalf("uninstall left a hooks.json that install created:\n%s", got)
			}
			continue
		}
		if !bytes.Equal(got, orig) {
			t.Fatalf("%s: uninstall did not restore the original:\n%s", src, got)
		}
	}
}

// A cx under another name, with the hook client beside it: its hooks run
// its own handler (the client would run a "cx" that is not there), a second
// install finds them rather than adding a second set (each hook would run
// twice), and uninstall takes them out.
func TestRenamedCXInstallsOnce(t *testing.T) {
	dir := t.TempDir()
	renamed := filepath.Join(dir, "cx-1.4")
	for _, name := range []string{"cx-1.4", ClientName} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := &Installer{CodexHome: t.TempDir(), CXPath: renamed, StateDir: t.TempDir()}
	ctx := context.Background()
	if res, err := in.Install(ctx); err != nil || !res.Changed {
		t.Fatalf("install: %v %v", res, err)
	}
	if res, err := in.Install(ctx); err != nil || res.Changed {
		t.Fatalf("second install changed something (%v)", err)
	}
	got, err := os.ReadFile(in.HooksPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Entries {
		want, _ := json.Marshal("exec " + shellQuote(renamed) + " ctl hook " + e.Event)
		if n := bytes.Count(got, want); n != 1 {
			t.Errorf("%s: %d handlers %s, want 1:\n%s", e.Event, n, want, got)
		}
	}
	if bytes.Contains(got, []byte(ClientName)) {
		t.Errorf("the client is installed for a cx it cannot run:\n%s", got)
	}
	if _, err := in.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(in.HooksPath()); err == nil {
		t.Fatalf("uninstall left a hooks.json that install created:\n%s", got)
	}
}

// Someone else edited hooks.json after install: uninstall cuts out only cx's
// entries and keeps their change.
func TestUninstallKeepsLaterEdits(t *testing.T) {
	home := t.TempDir()
	in := &Installer{CodexHome: home, CXPath: cxPath, StateDir: t.TempDir()}
	orig, _ := os.ReadFile("testdata/merge/others.json")
	os.WriteFile(in.HooksPath(), orig, 0o600)
	if _, err := in.Install(context.Background()); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(in.HooksPath())
	edited := bytes.Replace(cur, []byte(`"version": 1`), []byte(`"version": 2`), 1)
	os.WriteFile(in.HooksPath(), edited, 0o600)
	if _, err := in.Uninstall(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(in.HooksPath())
	if want := bytes.Replace(orig, []byte(`"version": 1`), []byte(`"version": 2`), 1); !bytes.Equal(got, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCorruptedFilesNeverRewritten(t *testing.T) {
	home := t.TempDir()
	in := &Installer{CodexHome: home, CXPath: cxPath, StateDir: t.TempDir()}
	bad, _ := os.ReadFile("testdata/merge/corrupted.json")
	os.WriteFile(in.HooksPath(), bad, 0o600)
	if _, err := in.Install(context.Background()); err == nil || !strings.Contains(err.Error(), in.HooksPath()) {
		t.Fatalf("install over a corrupted hooks.json: %v", err)
	}
	if got, _ := os.ReadFile(in.HooksPath()); !bytes.Equal(got, bad) {
		t.Fatal("corrupted hooks.json was rewritten")
	}
	os.Remove(in.HooksPath())
	os.WriteFile(in.ConfigPath(), []byte("model = \"x\"\n[broken\n"), 0o600)
	if _, err := in.Install(context.Background()); err == nil || !strings.Contains(err.Error(), in.ConfigPath()) {
		t.Fatalf("install with a corrupted config.toml: %v", err)
	}
	if _, err := os.Stat(in.HooksPath()); err == nil {
		t.Fatal("hooks.json written although config.toml is broken")
	}
}

func TestRemoveTrustEntriesKeepsComments(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	in := `# my settings
model = "gpt-5.5" # keep this comment

[hooks.state]

[hooks.state."/h/hooks.json:stop:0:0"]
trusted_hash = "sha256:aaa"

[hooks.state."/h/hooks.json:stop:0:1"]
trusted_hash = "sha256:bbb"

# tail comment
[projects."/w"]
trust_level = "trusted"
`
	os.WriteFile(p, []byte(in), 0o600)
	if err := removeTrustEntries(p, []string{"/h/hooks.json:stop:0:1"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	golden(t, "config-trust-removed.toml", got)
	if strings.Contains(string(got), "sha256:bbb") || !strings.Contains(string(got), "sha256:aaa") || !strings.Contains(string(got), "# keep this comment") {
		t.Fatalf("wrong edit:\n%s", got)
	}
}

func TestRemoveEmptyTables(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"at the end", "a = 1\n\n[hooks.state]\n", "a = 1\n"},
		{"empty with blanks", "a = 1\n\n[hooks.state]\n\n\n", "a = 1\n"},
		{"before another table", "[hooks.state]\n\n[x]\nb = 2\n", "[x]\nb = 2\n"},
		{"before a subtable of its own", "[hooks.state]\n[hooks.state.\"k\"]\ntrusted_hash = \"h\"\n", "[hooks.state.\"k\"]\ntrusted_hash = \"h\"\n"},
		{"a key lives there", "[hooks.state]\nx = 1\n", "[hooks.state]\nx = 1\n"},
		{"a comment lives there", "[hooks.state]\n# mine\n", "[hooks.state]\n# mine\n"},
		{"both", "a = 1\n\n[hooks]\n[hooks.state]\n", "a = 1\n"},
		{"not named", "[other]\n", "[other]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(p, []byte(c.in), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := removeEmptyTables(p, []string{"hooks.state", "hooks"}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if string(got) != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// cx's hook commands are recognised in every form cx has installed, so an
// install rewrites them rather than adding its own beside them: with
// "exec " or without, cx's handler or its client, any path; another
// program's, or cx's for another event, is not.
func TestIsOurs(t *testing.T) {
	for _, c := range []struct {
		command, event string
		ours           bool
		cxPath         string // the installing cx's
	}{
		{"exec '/opt/cx/bin/cx-hook' Stop", "Stop", true, ""},
		{"'/opt/cx/bin/cx-hook' Stop", "Stop", true, ""},
		{"exec '/opt/cx/bin/cx' ctl hook Stop", "Stop", true, ""},
		{"'/opt/cx/bin/cx' ctl hook Stop", "Stop", true, ""},
		{"  exec   /usr/bin/cx ctl hook SessionStart ", "SessionStart", true, ""},
		{"exec '/opt/cx/bin/cx-hook' Stop", "SessionEnd", false, ""},
		{"exec '/opt/other/bin/notify' Stop", "Stop", false, ""},
		{"exec", "Stop", false, ""},
		{"echo exec '/opt/cx/bin/cx-hook' Stop", "Stop", false, ""},
		// A cx under another name knows its own handler, not another's.
		{"exec '/opt/tools/cx-1.4' ctl hook Stop", "Stop", true, "/opt/tools/cx-1.4"},
		{"exec '/opt/tools/cx-1.4' ctl hook Stop", "Stop", false, "/opt/tools/cx-1.5"},
		{"exec '/opt/tools/cx-1.4' ctl hook Stop", "Stop", false, ""},
		{"exec '/opt/tools/cx-1.4' Stop", "Stop", false, "/opt/tools/cx-1.4"},
	} {
		if got := isOurs(c.command, c.event, c.cxPath); got != c.ours {
			t.Errorf("isOurs(%q, %s) = %v, want %v", c.command, c.event, got, c.ours)
		}
	}
}
