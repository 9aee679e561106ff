package codex

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
	"strings"
	"sync"
	"syscall"
	"time"

	"cx/internal/fsutil"
)

// Caps is what one Codex binary supports, learned from its own output.
type Caps struct {
	Version     string   `json:"version"`     // "0.169.0"
	NoDaemon    bool     `json:"no_daemon"`   // accepts --no-daemon
	Subcommands []string `json:"subcommands"` // names and aliases
	ValueFlags  []string `json:"value_flags"` // top-level options that take a value ("-c", "--config")
}

// Identity names a binary's exact bytes cheaply: device, inode, size, mtime.
func Identity(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("stat codex %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("%s:%d:%d", path, fi.Size(), fi.ModTime().UnixNano()), nil
	}
	return fmt.Sprintf("%s:%d:%d:%d:%d", path, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()), nil
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`codex-cli\s+(\S+)`) })

// Probe runs the binary's --version and --help to learn its capabilities.
func Probe(ctx context.Context, b Binary) (Caps, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	run := func(arg string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, b.Path, arg)
		cmd.Env = append(os.Environ(), b.Env...)
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("run %s %s: %w", b.Path, arg, err)
		}
		return out, nil
	}
	out, err := run("--version")
	if err != nil {
		return Caps{}, err
	}
	m := versionRE().FindSubmatch(out)
	if m == nil {
		return Caps{}, fmt.Errorf("run %s --version: unexpected output %q", b.Path, bytes.TrimSpace(out))
	}
	caps := Caps{Version: string(m[1])}
	help, err := run("--help")
	if err != nil {
		return Caps{}, err
	}
	parseHelp(help, &caps)
	return caps, nil
}

// helpREs are compiled on first use (only a cache miss parses help).
var helpREs = sync.OnceValue(func() [3]*regexp.Regexp {
	return [3]*regexp.Regexp{
		regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s{2,}(.*)$`),
		regexp.MustCompile(`\[aliases?: ([^\]]+)\]`),
		regexp.MustCompile(`^\s+(?:(-[A-Za-z]), )?(--[A-Za-z0-9-]+)(?: <[^>]+>)?`),
	}
})

// parseHelp reads clap's help: the Commands section and the options that
// take a value (written `--name <VALUE>`).
func parseHelp(help []byte, caps *Caps) {
	res := helpREs()
	commandRE, aliasRE, optionRE := res[0], res[1], res[2]
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		switch section {
		case "Commands":
			if m := commandRE.FindStringSubmatch(line); m != nil {
				caps.Subcommands = append(caps.Subcommands, m[1])
				if a := aliasRE.FindStringSubmatch(m[2]); a != nil {
					for _, al := range strings.Split(a[1], ",") {
						caps.Subcommands = append(caps.Subcommands, strings.TrimSpace(al))
					}
				}
			} else if a := aliasRE.FindStringSubmatch(line); a != nil && len(caps.Subcommands) > 0 {
				// an alias note wrapped onto the next line
				for _, al := range strings.Split(a[1], ",") {
					caps.Subcommands = append(caps.Subcommands, strings.TrimSpace(al))
				}
			}
		case "Options":
			m := optionRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if m[2] == "--no-daemon" {
				caps.NoDaemon = true
			}
			if strings.Contains(line, m[2]+" <") {
				if m[1] != "" {
					caps.ValueFlags = append(caps.ValueFlags, m[1])
				}
				caps.ValueFlags = append(caps.ValueFlags, m[2])
			}
		}
	}
}

// Cache keeps Caps per binary identity in one small JSON file, so a warm
// start costs a stat and a read instead of two child processes.
type Cache struct{ Path string }

// FindFor is Find for cx: bin as cx's config names it, PATH from getenv,
// the capabilities cached in cxHome/cache when there is a CX_HOME to use.
func FindFor(ctx context.Context, bin, cxHome string, getenv func(string) (string, bool)) (Binary, Caps, error) {
	pathEnv, _ := getenv("PATH")
	cache := ""
	if cxHome != "" {
		cache = filepath.Join(cxHome, "cache")
	}
	return Find(ctx, bin, pathEnv, cache)
}

// Find resolves the Codex binary (bin: cx's setting; pathEnv: $PATH) and
// its capabilities, cached in cacheDir ("": probed, not cached).
func Find(ctx context.Context, bin, pathEnv, cacheDir string) (Binary, Caps, error) {
	self, err := os.Executable()
	if err != nil {
		self = ""
	}
	b, err := Resolve(bin, pathEnv, self)
	if err != nil {
		return b, Caps{}, err
	}
	c := Cache{}
	if cacheDir != "" {
		c.Path = filepath.Join(cacheDir, "codex-caps.json")
	}
	caps, err := c.Lookup(ctx, b)
	return b, caps, err
}

type cacheFile struct {
	Entries map[string]Caps `json:"entries"`
}

// Lookup returns the cached Caps for b, probing and storing on a miss.
// A cache that cannot be written is not an error: the probe result is used.
// With no Path nothing is read or stored.
func (c Cache) Lookup(ctx context.Context, b Binary) (Caps, error) {
	id, err := Identity(b.Path)
	if err != nil {
		return Caps{}, err
	}
	var f cacheFile
	if c.Path == "" {
		return Probe(ctx, b)
	}
	if data, err := os.ReadFile(c.Path); err == nil {
		_ = json.Unmarshal(data, &f) // a damaged cache is just a miss
	}
	if caps, ok := f.Entries[id]; ok && caps.Version != "" {
		return caps, nil
	}
	caps, err := Probe(ctx, b)
	if err != nil {
		return Caps{}, err
	}
	if f.Entries == nil {
		f.Entries = map[string]Caps{}
	}
	// Drop entries of binaries that no longer exist, so the file stays small.
	for k := range f.Entries {
		if p, _, ok := strings.Cut(k, ":"); ok {
			if _, err := os.Stat(p); err != nil {
				delete(f.Entries, k)
			}
		}
	}
	f.Entries[id] = caps
	if data, err := json.MarshalIndent(f, "", "  "); err == nil {
		_ = fsutil.WriteReplace(c.Path, data, 0o600)
	}
	return caps, nil
}

// parsedArgs is what cx needs to know of Codex's command line.
type parsedArgs struct {
	sub      string          // the subcommand ("" for the TUI, with or without a prompt)
	topFlags map[string]bool // flags before the subcommand
	anyFlags map[string]bool // every flag, before "--"
}

// parse walks Codex's arguments, skipping option values (the options that
// take one are read from the binary's own --help).
func parse(args []string, caps Caps) parsedArgs {
	takesValue := map[string]bool{}
	for _, f := range caps.ValueFlags {
		takesValue[f] = true
	}
	isSub := map[string]bool{}
	for _, s := range caps.Subcommands {
		isSub[s] = true
	}
	p := parsedArgs{topFlags: map[string]bool{}, anyFlags: map[string]bool{}}
	positional := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		var name string
		switch {
		case a == "--":
			return p
		case strings.HasPrefix(a, "--"):
			n, _, hasValue := strings.Cut(a, "=")
			name = n
			if takesValue[n] && !hasValue {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name = a[:2]
			if takesValue[name] && len(a) == 2 {
				i++
			}
		default:
			if !positional {
				positional = true
				if isSub[a] {
					p.sub = a
				}
			}
			continue
		}
		p.anyFlags[name] = true
		if !positional {
			p.topFlags[name] = true
		}
	}
	return p
}

// Subcommand is the Codex subcommand args select ("" for the TUI, with or
// without a prompt).
func Subcommand(args []string, caps Caps) string { return parse(args, caps).sub }

// SelectsTUI reports whether args start Codex's interactive TUI: no
// subcommand (options and perhaps a prompt), or `resume`/`fork`; and not
// connected to a remote app server (--remote), and not --help/--version.
func SelectsTUI(args []string, caps Caps) bool {
	p := parse(args, caps)
	if p.anyFlags["--remote"] {
		return false
	}
	if p.sub == "" && (p.topFlags["--help"] || p.topFlags["-h"] || p.topFlags["--version"] || p.topFlags["-V"]) {
		return false
	}
	return p.sub == "" || p.sub == "resume" || p.sub == "fork"
}

// StartsSession reports whether args start a session of the user's: the
// TUI (SelectsTUI) or `exec` (`e`).
func StartsSession(args []string, caps Caps) bool {
	sub := Subcommand(args, caps)
	return SelectsTUI(args, caps) || sub == "exec" || sub == "e"
}

// Args returns the arguments cx gives Codex: the user's, verbatim, with
// --no-daemon first when the binary has it and they select the TUI.
func Args(user []string, caps Caps) []string {
	if !caps.NoDaemon || !SelectsTUI(user, caps) {
		return user
	}
	for _, a := range user {
		if a == "--no-daemon" {
			return user
		}
		if a == "--" {
			break
		}
	}
	return append([]string{"--no-daemon"}, user...)
}

// Cwd is the directory Codex will run in with args, started in dir; ""
// when the arguments point it elsewhere (-C/--cd).
func Cwd(args []string, caps Caps, dir string) string {
	if p := parse(args, caps); p.anyFlags["-C"] || p.anyFlags["--cd"] {
		return ""
	}
	return dir
}

// IsAppServer reports whether args run the app-server itself (not one of
// its tooling subcommands).
func IsAppServer(args []string, caps Caps) bool {
	if Subcommand(args, caps) != "app-server" {
		return false
	}
	after := false
	for _, a := range args {
		if a == "app-server" {
			after = true
			continue
		}
		if after {
			switch a {
			case "daemon", "proxy", "generate-ts", "generate-json-schema", "help":
				return false
			}
		}
	}
	return true
}
