package codex

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The help text of the real binaries (testdata) yields their capabilities.
func TestParseHelpReal(t *testing.T) {
	for _, c := range []struct {
		file     string
		noDaemon bool
	}{{"testdata/help-0.169.0.txt", true}, {"testdata/help-0.128.0.txt", false}} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		var caps Caps
		parseHelp(data, &caps)
		if caps.NoDaemon != c.noDaemon {
			t.Errorf("%s: NoDaemon %v, want %v", c.file, caps.NoDaemon, c.noDaemon)
		}
		for _, sub := range []string{"exec", "e", "resume", "fork", "app-server", "apply", "a", "help"} {
			if !slices.Contains(caps.Subcommands, sub) {
				t.Errorf("%s: subcommand %q missing from %v", c.file, sub, caps.Subcommands)
			}
		}
		for _, f := range []string{"-c", "--config", "-m", "--model", "--remote", "-C", "--cd", "--enable", "-i", "-a"} {
			if !slices.Contains(caps.ValueFlags, f) {
				t.Errorf("%s: value flag %q missing from %v", c.file, f, caps.ValueFlags)
			}
		}
		for _, f := range []string{"--no-daemon", "--search", "-h", "--oss"} {
			if slices.Contains(caps.ValueFlags, f) {
				t.Errorf("%s: %q taken for a value flag", c.file, f)
			}
		}
	}
}

// helpCaps is what Codex's --help in file says it can do.
func helpCaps(t *testing.T, file string) Caps {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var caps Caps
	parseHelp(data, &caps)
	return caps
}

func TestSelectsTUI(t *testing.T) {
	caps := helpCaps(t, "testdata/help-0.169.0.txt")
	cases := []struct {
		args string
		want bool
	}{
		{"", true},
		{"fix the tests", true},
		{"-m gpt-5.5 --search hello", true},
		{"-c model=x resume", true},
		{"--config=exec resume --last", true},
		{"-C exec", true}, // "exec" is the directory
		{"-- exec", true}, // after --, a prompt
		{"resume abc", true},
		{"fork --last", true},
		{"exec hi", false},
		{"e hi", false},
		{"review", false},
		{"app-server", false},
		{"mcp list", false},
		{"--remote ws://h:1", false},
		{"--remote=ws://h:1", false},
		{"resume --remote ws://h:1 abc", false},
		{"hello --remote ws://h:1", false},
		{"--version", false},
		{"-V", false},
		{"--help", false},
		{"resume --help", true},
	}
	for _, c := range cases {
		if got := SelectsTUI(strings.Fields(c.args), caps); got != c.want {
			t.Errorf("SelectsTUI(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	if got := Args([]string{"--no-daemon", "x"}, Caps{NoDaemon: true}); len(got) != 2 {
		t.Errorf("--no-daemon doubled: %v", got)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"0.169.0", "0.145.0", 1}, {"0.128.0", "0.145.0", -1}, {"0.99.0", "0.145.0", -1}, {"1.0", "1.0.0", 0}, {"0.145.0-alpha.2", "0.145.0", 0}} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestSubcommand(t *testing.T) {
	data, _ := os.ReadFile("testdata/help-0.169.0.txt")
	var caps Caps
	parseHelp(data, &caps)
	for args, want := range map[string]string{"": "", "-m x exec hi": "exec", "e hi": "e", "fix it": "", "-c a=b resume": "resume", "-- exec": ""} {
		if got := Subcommand(strings.Fields(args), caps); got != want {
			t.Errorf("Subcommand(%q) = %q, want %q", args, got, want)
		}
	}
}

// Codex runs where cx started it unless -C/--cd points it elsewhere; a
// prompt or an option's value that reads like the flag does not.
func TestCwd(t *testing.T) {
	data, _ := os.ReadFile("testdata/help-0.169.0.txt")
	var caps Caps
	parseHelp(data, &caps)
	for args, want := range map[string]string{"": "/w", "exec hi": "/w", "-C /x": "", "--cd=/x exec hi": "", "exec --cd /x hi": "",
		"-m -C exec hi": "/w", "exec -- -C": "/w"} {
		if got := Cwd(strings.Fields(args), caps, "/w"); got != want {
			t.Errorf("Cwd(%q) = %q, want %q", args, got, want)
		}
	}
}

// A session of the user's starts with the TUI or exec; not with another
// subcommand, a flag that only prints, or the app-server.
func TestStartsSession(t *testing.T) {
	caps := helpCaps(t, "testdata/help-0.169.0.txt")
	for args, want := range map[string]bool{
		"": true, "fix the tests": true, "resume --last": true, "exec hi": true, "e hi": true, "-m x exec hi": true,
		"--version": false, "login": false, "mcp list": false, "app-server": false, "completion bash": false,
	} {
		if got := StartsSession(strings.Fields(args), caps); got != want {
			t.Errorf("StartsSession(%q) = %v, want %v", args, got, want)
		}
	}
}
