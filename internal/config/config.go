// Package config loads cx's own configuration: CX_HOME, CX_CONFIG and the
// config.toml keys of the design's "Contract", with their defaults.
// Environment variables win over the file; unknown keys are warnings.
//
// It lives under internal/ (not hookcfg/) because the supervisor, the
// lifecycle and injection all read it and dependencies point down.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"cx/internal/health"
)

// Duration is a TOML string such as "5s" or "30m".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %w", b, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q: negative", b)
	}
	d.Duration = v
	return nil
}

// MarshalText prints the duration the way it is written.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Config is cx's configuration with defaults applied.
type Config struct {
	Sinks []string `toml:"sinks"`

	Codex struct {
		Bin string `toml:"bin"`
	} `toml:"codex"`

	Wrapper struct {
		Grace Duration `toml:"grace"`
	} `toml:"wrapper"`

	Capture struct {
		MaxToolChars int `toml:"max_tool_chars"`
		MaxLineBytes int `toml:"max_line_bytes"`
	} `toml:"capture"`

	Lifecycle struct {
		ExitBudget   Duration `toml:"exit_budget"`
		IdleTTL      Duration `toml:"idle_ttl"`
		ActiveWindow Duration `toml:"active_window"`
		MaxAttempts  int      `toml:"max_attempts"`
	} `toml:"lifecycle"`

	Inject struct {
		Enabled  bool `toml:"enabled"`
		MaxChars int  `toml:"max_chars"`
	} `toml:"inject"`

	// Recall is per-prompt recall: on each prompt, the archived turns of
	// the project's other sessions that answer it (CX_RECALL_OFF=1 turns it
	// off for one run).
	Recall struct {
		Enabled  bool    `toml:"enabled"`
		MaxChars int     `toml:"max_chars"`
		MinScore float64 `toml:"min_score"`
		// Dense: a word near one of the prompt's in meaning counts for
		// a share of it (internal/nearwords).
		Dense bool `toml:"dense"`
	} `toml:"recall"`

	OpenViking struct {
		URL       string   `toml:"url"`
		APIKeyEnv string   `toml:"api_key_env"`
		Account   string   `toml:"account"`
		User      string   `toml:"user"`
		Peer      string   `toml:"peer"`
		Timeout   Duration `toml:"timeout"`
		// ServerHold is how long the server may still act on a request cx
		// stopped waiting for (its session lock: 30 s, then the work); cx decides whether
		// such a request arrived only after it has passed.
		ServerHold Duration `toml:"server_hold"`
		// MaxToolChars bounds each tool output sent (the server stores
		// larger parts separately).
		MaxToolChars int `toml:"max_tool_chars"`
		// AllowWithPlugin lets the sink run while the OpenViking Codex
		// plugin also captures the same sessions (each turn then twice).
		AllowWithPlugin bool `toml:"allow_with_plugin"`
	} `toml:"openviking"`

	Exec struct {
		Command []string `toml:"command"`
		Timeout Duration `toml:"timeout"`
	} `toml:"exec"`

	Debug struct {
		// HookPayloads keeps each hook's whole payload (redacted) in
		// logs/hook-events.jsonl; off, the log keeps only what identifies
		// and measures the event.
		HookPayloads bool `toml:"hook_payloads"`
	} `toml:"debug"`

	// Home is CX_HOME; Path the config file that was read (or would be).
	Home string `toml:"-"`
	Path string `toml:"-"`
	// FileRead is true when the config file exists and was read; false,
	// cx runs on defaults (and the environment).
	FileRead bool `toml:"-"`
	// SinksFromEnv is true when CX_SINKS set Sinks.
	SinksFromEnv bool `toml:"-"`
	// Warnings are problems that did not stop loading (unknown keys).
	Warnings []string `toml:"-"`
	// Skipped are the file's lines cx could not use (each also a warning).
	Skipped []Skipped `toml:"-"`
}

// Default returns the configuration with every default of the Contract.
func Default() Config {
	var c Config
	c.Sinks = []string{"local"}
	c.Wrapper.Grace = Duration{5 * time.Second}
	c.Capture.MaxToolChars = 2000
	c.Capture.MaxLineBytes = 16 << 20
	c.Lifecycle.ExitBudget = Duration{2 * time.Second}
	c.Lifecycle.IdleTTL = Duration{30 * time.Minute}
	c.Lifecycle.ActiveWindow = Duration{2 * time.Minute}
	c.Lifecycle.MaxAttempts = 20
	c.Inject.Enabled = true
	c.Inject.MaxChars = 6000
	c.Recall.Enabled = true
	c.Recall.MaxChars = 2000
	c.Recall.MinScore = 0.4
	c.Recall.Dense = true
	c.OpenViking.APIKeyEnv = "OPENVIKING_API_KEY"
	c.OpenViking.Timeout = Duration{35 * time.Second}
	c.OpenViking.ServerHold = Duration{40 * time.Second} // the server's 30 s session lock, then its work
	c.OpenViking.MaxToolChars = 20000
	c.Exec.Timeout = Duration{30 * time.Second}
	return c
}

// Getenv looks up an environment variable (os.LookupEnv in production).
type Getenv func(string) (string, bool)

// UserHome is the user's home directory the way Codex finds it: $HOME,
// else the passwd entry of the user cx runs as (an SDK or daemon may start
// cx with a bare environment, e.g. only PATH).
func UserHome(getenv Getenv) (string, error) {
	if h, ok := getenv("HOME"); ok && h != "" {
		return h, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("$HOME is not set and the user's passwd entry cannot be read: %w", err)
	}
	if u.HomeDir == "" {
		return "", fmt.Errorf("$HOME is not set and user %s has no home directory", u.Username)
	}
	return u.HomeDir, nil
}

// Home returns CX_HOME, defaulting to ~/.cx.
func Home(getenv Getenv) (string, error) {
	if v, ok := getenv("CX_HOME"); ok && v != "" {
		return filepath.Abs(v)
	}
	home, err := UserHome(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cx"), nil
}

// ErrHome marks a CX_HOME cx cannot use: none can be found, or it (or a
// folder on its path) is not a directory. The fix is CX_HOME's, not the
// config file's.
var ErrHome = errors.New("cannot use CX_HOME")

// homeProblem says why dir cannot be CX_HOME when a file stands where a
// folder of its path should be (nil otherwise).
func homeProblem(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil && !fi.IsDir() {
			if d == dir {
				return fmt.Errorf("%w: %s is a file, not a directory", ErrHome, dir)
			}
			return fmt.Errorf("%w: %s cannot exist: %s is a file, not a directory", ErrHome, dir, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// EnsureHome creates CX_HOME with mode 0700 when it does not exist.
func EnsureHome(dir string) error {
	if err := homeProblem(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create CX_HOME %s: %w", dir, err)
	}
	return nil
}

// Load reads the configuration: defaults, then the file (CX_CONFIG or
// $CX_HOME/config.toml; absence is fine), then the environment.
func Load(getenv Getenv) (c Config, err error) { return load(getenv, true) }

// load is Load; without readFile the file is left unread (its path is
// still set).
func load(getenv Getenv, readFile bool) (c Config, err error) {
	c = Default()
	// The environment applies whatever happens to the file: a run that
	// cannot use CX_HOME still runs the Codex CX_CODEX_BIN names.
	defer func() {
		if v, ok := getenv("CX_CODEX_BIN"); ok && v != "" {
			c.Codex.Bin = v
		}
	}()
	home, err := Home(getenv)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrHome, err)
	}
	c.Home = home
	c.Path = filepath.Join(home, "config.toml")
	if v, ok := getenv("CX_CONFIG"); ok && v != "" {
		c.Path = v
	}
	if err := homeProblem(home); err != nil {
		return c, err
	}
	data, err := os.ReadFile(c.Path)
	if !readFile {
		data, err = nil, fs.ErrNotExist
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, fmt.Errorf("read config %s: %w", c.Path, err)
	default:
		c.FileRead = true
		if err := c.decode(string(data)); err != nil {
			return c, err
		}
	}
	if v, _ := getenv("CX_RECALL_OFF"); v == "1" {
		c.Recall.Enabled = false
	}
	if v, ok := getenv("CX_SINKS"); ok && v != "" {
		c.Sinks = parseSinks(v)
		c.SinksFromEnv = true
	}
	return c, c.validate()
}

// ErrParse marks a config file that is not valid TOML (the error says the
// line).
var ErrParse = errors.New("config does not parse")

// parseError is TOML's complaint, marked ErrParse.
type parseError struct{ err error }

func (e parseError) Error() string   { return e.err.Error() }
func (e parseError) Unwrap() []error { return []error{ErrParse, e.err} }
func (e parseError) line() (int, bool) {
	var pe toml.ParseError
	if errors.As(e.err, &pe) {
		return pe.Position.Line, true
	}
	return 0, false
}

// ParseLine is the line of the config file a parse error is on (0 when
// it does not say).
func ParseLine(err error) int {
	var pe parseError
	if errors.As(err, &pe) {
		if n, ok := pe.line(); ok {
			return n
		}
	}
	return 0
}

// OnDefaults is the configuration a command that only reads runs on when
// the file does not parse: the defaults, with CX_HOME, the file's path and
// the environment's overrides, as Codex runs on its defaults past a bad
// config of its own. Any other error stands.
func OnDefaults(getenv Getenv, err error) (Config, error) {
	if !errors.Is(err, ErrParse) {
		return Config{}, err
	}
	c, derr := load(getenv, false)
	if derr != nil {
		return c, derr
	}
	return c, nil
}

// ToRead is the configuration a command that only reads runs with, from
// what Load gave (cfg, err), and the one warning to say: past a file that
// does not parse, the defaults (as Codex runs past a bad config of its
// own); past an unknown sink, the file without it — reading never depends
// on the sinks a run records to. Any other error stands.
func ToRead(getenv Getenv, cfg Config, err error) (Config, string, error) {
	switch {
	case errors.Is(err, ErrParse):
		c, err2 := OnDefaults(getenv, err)
		return c, fmt.Sprintf("%v; running on the defaults (`cx ctl doctor` says how to fix it)", err), err2
	case errors.Is(err, ErrSink):
		return cfg.KnownSinksOnly(), fmt.Sprintf("%v; runs are not recorded until it is fixed (reading goes on)", err), nil
	}
	return cfg, "", err
}

// knownSinks are the sink names cx understands.
var knownSinks = []string{"local", "openviking", "exec"}

// parseSinks splits a CX_SINKS value; "none" (or empty) means no sinks.
func parseSinks(v string) []string {
	out := []string{}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" || s == "none" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ErrSink marks a sink name cx does not know: a run cannot record to it;
// what only reads goes on without it.
var ErrSink = errors.New("unknown sink")

func (c *Config) validate() error {
	for _, s := range c.Sinks {
		if !slices.Contains(knownSinks, s) {
			return fmt.Errorf("%s: %w %q (known: %s)", c.sinksSource(), ErrSink, s, strings.Join(knownSinks, ", "))
		}
	}
	if c.Capture.MaxToolChars <= 0 || c.Capture.MaxLineBytes <= 0 || c.Lifecycle.MaxAttempts <= 0 || c.Inject.MaxChars <= 0 || c.OpenViking.MaxToolChars <= 0 {
		return fmt.Errorf("config %s: capture.max_tool_chars, capture.max_line_bytes, lifecycle.max_attempts, inject.max_chars and openviking.max_tool_chars must be positive", c.Path)
	}
	if c.Recall.MaxChars <= 0 || c.Recall.MinScore <= 0 || c.Recall.MinScore > 1 {
		return fmt.Errorf("config %s: recall.max_chars must be positive and recall.min_score in (0, 1]", c.Path)
	}
	return nil
}

// sinksSource says where the sinks came from: the variable, or the
// file's line.
func (c *Config) sinksSource() string {
	if c.SinksFromEnv {
		return "CX_SINKS"
	}
	if data, err := os.ReadFile(c.Path); err == nil {
		for i, l := range strings.Split(string(data), "\n") {
			if k, _, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "sinks" {
				return fmt.Sprintf("config %s line %d", c.Path, i+1)
			}
		}
	}
	return "config " + c.Path
}

// KnownSinksOnly is c without the sinks cx does not know (what a command
// that only reads runs with past ErrSink).
func (c Config) KnownSinksOnly() Config {
	c.Sinks = slices.DeleteFunc(slices.Clone(c.Sinks), func(s string) bool { return !slices.Contains(knownSinks, s) })
	return c
}

// Check is doctor's finding on cx's config: loaded (err from Load) and
// where from, or cx on its defaults.
func Check(cfg Config, err error) health.Check {
	if errors.Is(err, ErrHome) {
		fix := "set CX_HOME to a directory cx may create and write"
		if cfg.Home != "" {
			fix = "move what stands at " + cfg.Home + " aside, or " + fix
		}
		return health.Check{Name: "config", Detail: err.Error() + " (Codex runs through cx unrecorded)", Fix: fix}
	}
	if errors.Is(err, ErrParse) {
		fix := "fix " + cfg.Path
		if n := ParseLine(err); n > 0 {
			fix = fmt.Sprintf("fix line %d of %s (or move the file aside: cx runs on its defaults without it)", n, cfg.Path)
			if line, hint := lineHint(cfg.Path, n); line != "" {
				fix = fmt.Sprintf("fix line %d of %s, `%s`%s (or move the file aside: cx runs on its defaults without it)", n, cfg.Path, line, hint)
			}
		}
		return health.Check{Name: "config", Detail: err.Error() + " (Codex runs through cx unrecorded; search, recall and cx's MCP server run on the defaults)", Fix: fix}
	}
	if err != nil {
		return health.Check{Name: "config", Detail: err.Error() + " (Codex runs through cx unrecorded)", Fix: "fix " + cfg.Path}
	}
	if len(cfg.Skipped) > 0 {
		// Read, but not as written: each line cx skipped, and what to write.
		var fixes []string
		for _, sk := range cfg.Skipped {
			if sk.Write != "" {
				fixes = append(fixes, fmt.Sprintf("line %d: write `%s`", sk.Line, sk.Write))
			} else {
				fixes = append(fixes, fmt.Sprintf("line %d: fix or remove `%s`", sk.Line, sk.Text))
			}
		}
		return health.Check{Name: "config", Detail: strings.Join(cfg.Warnings, "; ") + " (the rest of the file is read; runs are recorded)",
			Fix: "in " + cfg.Path + ", " + strings.Join(fixes, "; ")}
	}
	detail := cfg.Path
	if !cfg.FileRead {
		detail = "no file at " + cfg.Path + ": cx runs on its defaults (sinks " + strings.Join(cfg.Sinks, ", ") + ")"
	}
	if len(cfg.Warnings) > 0 {
		detail += " (" + strings.Join(cfg.Warnings, "; ") + ")"
	}
	return health.Check{Name: "config", OK: true, Detail: detail}
}

// lineHint is line n of the file at path (trimmed), and what is likely
// wrong with it: a text value written without quotes (`grace = 5s` wants
// `grace = "5s"`), the commonest slip in a hand-edited TOML file.
func lineHint(path string, n int) (line, hint string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return "", ""
	}
	line = strings.TrimSpace(lines[n-1])
	key, value, ok := strings.Cut(line, "=")
	value = strings.TrimSpace(value)
	if !ok || value == "" || strings.ContainsAny(value[:1], "\"'[{") {
		return line, ""
	}
	if _, err := strconv.ParseFloat(strings.ReplaceAll(value, "_", ""), 64); err == nil || value == "true" || value == "false" {
		return line, ""
	}
	return line, fmt.Sprintf(": a text value wants quotes, %s = %q", strings.TrimSpace(key), value)
}

// ToolChars bounds each captured tool input and output of a session that
// goes to sinks: [capture] max_tool_chars, or [openviking] max_tool_chars
// when it goes to OpenViking and that is larger (the server takes tool
// output whole).
func (c Config) ToolChars(sinks []string) int {
	n := c.Capture.MaxToolChars
	for _, s := range sinks {
		if s == "openviking" {
			n = max(n, c.OpenViking.MaxToolChars)
		}
	}
	return n
}
