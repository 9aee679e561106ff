package config

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) Getenv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaultsWithoutFile(t *testing.T) {
	home := t.TempDir()
	c, err := Load(envOf(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Home != filepath.Join(home, ".cx") || c.Path != filepath.Join(home, ".cx", "config.toml") {
		t.Fatalf("home %q path %q", c.Home, c.Path)
	}
	d := Default()
	if c.Wrapper.Grace.Duration != 5*time.Second || c.Lifecycle.ExitBudget != d.Lifecycle.ExitBudget ||
		c.Capture.MaxLineBytes != 16777216 || strings.Join(c.Sinks, ",") != "local" || !c.Inject.Enabled {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	data := `# comment
sinks = ["local", "exec"]
color = 1
[codex]
bin = "/opt/codex"
[wrapper]
grace = "1500ms"
[lifecycle]
idle_ttl = "10m"
unknown_inner = true
[exec]
command = ["memsearch", "ingest"]
`
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(envOf(map[string]string{"CX_HOME": dir, "CX_CONFIG": cfg}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Codex.Bin != "/opt/codex" || c.Wrapper.Grace.Duration != 1500*time.Millisecond ||
		c.Lifecycle.IdleTTL.Duration != 10*time.Minute || strings.Join(c.Exec.Command, " ") != "memsearch ingest" ||
		strings.Join(c.Sinks, ",") != "local,exec" {
		t.Fatalf("file not applied: %+v", c)
	}
	if len(c.Warnings) != 2 || !strings.Contains(c.Warnings[0], `"color"`) || !strings.Contains(c.Warnings[1], `"lifecycle.unknown_inner"`) {
		t.Fatalf("warnings %q", c.Warnings)
	}
	c, err = Load(envOf(map[string]string{"CX_HOME": dir, "CX_CONFIG": cfg, "CX_SINKS": "none", "CX_CODEX_BIN": "/x/codex"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sinks) != 0 || !c.SinksFromEnv || c.Codex.Bin != "/x/codex" {
		t.Fatalf("env not applied: sinks %q bin %q", c.Sinks, c.Codex.Bin)
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"sink":     "sinks = [\"s3\"]\n",
		"negative": "[capture]\nmax_tool_chars = -1\n",
	} {
		p := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(envOf(map[string]string{"CX_HOME": dir, "CX_CONFIG": p})); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v should name %s", name, err, p)
		}
	}
	// A line TOML or the key's type refuses is skipped, with a warning that
	// names the file and the line.
	for name, data := range map[string]string{
		"syntax":   "sinks = [\n",
		"duration": "[wrapper]\ngrace = \"soon\"\n",
		"type":     "[wrapper]\ngrace = 5\n",
	} {
		p := filepath.Join(dir, name+".toml")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(envOf(map[string]string{"CX_HOME": dir, "CX_CONFIG": p}))
		if err != nil || len(c.Skipped) != 1 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], p) {
			t.Errorf("%s: %v, skipped %+v, warnings %q", name, err, c.Skipped, c.Warnings)
		}
	}
}

// Without $HOME (an SDK's bare environment) the home is the passwd
// entry's, as Codex finds it; a CX_HOME with a file on its path is
// refused as CX_HOME's problem, not the config file's.
func TestHomeWithoutHOMEAndUnusableHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no passwd entry for this user: %v", err)
	}
	got, err := Home(envOf(map[string]string{"PATH": "/usr/bin"}))
	if err != nil || got != filepath.Join(u.HomeDir, ".cx") {
		t.Fatalf("Home without $HOME = %q, %v; want %s/.cx", got, err, u.HomeDir)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, home := range []string{file, filepath.Join(file, "sub", "cx")} {
		c, err := Load(envOf(map[string]string{"CX_HOME": home, "CX_CODEX_BIN": "/opt/codex"}))
		if !errors.Is(err, ErrHome) || !strings.Contains(err.Error(), file+" is a file") {
			t.Errorf("Load(CX_HOME=%s) err = %v, want ErrHome naming %s", home, err, file)
		}
		if c.Codex.Bin != "/opt/codex" {
			t.Errorf("CX_CODEX_BIN not applied when CX_HOME is unusable: %q", c.Codex.Bin)
		}
		if err := EnsureHome(home); !errors.Is(err, ErrHome) {
			t.Errorf("EnsureHome(%s) = %v", home, err)
		}
	}
}

// doctor's fix for a config line that does not parse names the line and,
// for a text value written bare, the quotes it wants.
func TestLineHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	body := "[wrapper]\ngrace = 5s\nsinks = [local]\nmax = 12\nbroken line\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n          int
		line, hint string
	}{
		{2, "grace = 5s", `: a text value wants quotes, grace = "5s"`},
		{3, "sinks = [local]", ""},
		{4, "max = 12", ""},
		{5, "broken line", ""},
		{9, "", ""},
	} {
		line, hint := lineHint(path, tc.n)
		if line != tc.line || hint != tc.hint {
			t.Errorf("line %d: %q %q, want %q %q", tc.n, line, hint, tc.line, tc.hint)
		}
	}
}

// One wrong value, or one line that is not TOML, costs that line alone:
// the rest of the file is read, the line is a warning that names it and a
// line to write, and nothing stops a run from being recorded (issue 52).
func TestConfigSkipsWhatItGetsWrong(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		check      func(Config) bool
		warn       []string
	}{
		{"wrong type", "[inject]\nmax_chars = \"lots\"\n[recall]\nmax_chars = 900\n",
			func(c Config) bool { return c.Inject.MaxChars == Default().Inject.MaxChars && c.Recall.MaxChars == 900 },
			[]string{"line 2, `max_chars = \"lots\"`", "the value is of type string, cx wants integer", "write e.g. `max_chars = 6000`"}},
		{"not TOML", "[wrapper]\ngrace = 5s\n[recall]\nmax_chars = 900\n",
			func(c Config) bool { return c.Wrapper.Grace == Default().Wrapper.Grace && c.Recall.MaxChars == 900 },
			[]string{"line 2, `grace = 5s`", "write e.g. `grace = \"5s\"`"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(func(k string) (string, bool) {
				if k == "CX_HOME" {
					return home, true
				}
				return "", false
			})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !tc.check(c) {
				t.Errorf("config read: %+v", c)
			}
			if len(c.Warnings) != 1 || len(c.Skipped) != 1 {
				t.Fatalf("warnings %q skipped %+v", c.Warnings, c.Skipped)
			}
			for _, w := range tc.warn {
				if !strings.Contains(c.Warnings[0], w) {
					t.Errorf("the warning %q lacks %q", c.Warnings[0], w)
				}
			}
		})
	}
}
