package hookcfg

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"

	"cx/internal/codex"
	"cx/internal/fsutil"
)

// Installer puts cx's hooks into one Codex home and takes them out again.
type Installer struct {
	CodexHome string
	CXPath    string // absolute path of the cx binary the hooks run
	StateDir  string // where install remembers what it changed (CX_HOME/install)
	// Codex is the native Codex binary and its environment, used to record
	// hook trust through Codex's own app-server; Trust says whether the
	// installed version requires trust at all.
	Codex    string
	CodexEnv []string
	Trust    bool
	// MCPCommands says the Codex found manages MCP servers itself (`codex
	// mcp add`); CXHome is the CX_HOME cx's MCP server is told to search.
	MCPCommands bool
	CXHome      string
}

// New is the installer of this cx binary's hooks into codexHome ("": the
// Codex home getenv names), remembering its changes in stateDir. With a
// Codex found (codexErr nil) it records trust through that Codex where the
// version requires it.
func New(codexHome, stateDir string, getenv func(string) (string, bool), bin codex.Binary, caps codex.Caps, codexErr error) (*Installer, error) {
	self, err := Self()
	if err != nil {
		return nil, err
	}
	if codexHome == "" {
		codexHome = codex.Home(getenv)
	}
	codexHome, _ = filepath.Abs(codexHome)
	in := &Installer{CodexHome: codexHome, CXPath: self, StateDir: stateDir}
	if codexErr == nil {
		in.Codex = bin.Path
		in.CodexEnv = codex.Env(os.Environ(), bin, []string{codex.HomeEnv(codexHome), "CX_HOOKS_OFF=1"}, "CX_RUN_ID")
		in.Trust = caps.HasHookTrust()
		in.MCPCommands = caps.HasMCPCommands()
	}
	return in, nil
}

// Self is the cx binary the hooks run: this executable, symlinks resolved.
func Self() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the cx binary: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return self, nil
}

// HooksPath is the home's hooks.json.
func (in *Installer) HooksPath() string { return filepath.Join(in.CodexHome, "hooks.json") }

// ConfigPath is the home's config.toml.
func (in *Installer) ConfigPath() string { return filepath.Join(in.CodexHome, "config.toml") }

// state is what install changed, so uninstall can undo exactly that.
type state struct {
	HooksPath    string `json:"hooks_path"`
	Original     string `json:"original"`      // hooks.json before cx's first install ("" if absent)
	HadOriginal  bool   `json:"had_original"`  // the file existed
	InstalledSum string `json:"installed_sum"` // sha256 of the file as cx left it
	// ConfigTables are the trust tables (codex.TrustTables)
	// config.toml had before cx's first install; Codex's trust write adds
	// the ones missing, and uninstall takes those out again when empty.
	ConfigTables []string `json:"config_tables"`
	// HadConfig says config.toml existed before cx's first install: if it
	// did not, uninstall removes the file once cx's tables leave it empty.
	// A pointer: a state written before it was recorded says nothing.
	HadConfig *bool `json:"had_config,omitempty"`
}

func (in *Installer) statePath() string {
	sum := sha256.Sum256([]byte(in.HooksPath()))
	return filepath.Join(in.StateDir, "hooks-"+hex.EncodeToString(sum[:6])+".json")
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Plan computes the new hooks.json without writing anything.
func (in *Installer) Plan() (old, new []byte, changed bool, err error) {
	old, err = os.ReadFile(in.HooksPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, fmt.Errorf("read %s: %w", in.HooksPath(), err)
	}
	if err := in.checkConfig(); err != nil {
		return nil, nil, false, err
	}
	new, changed, err = Merge(in.HooksPath(), old, in.CXPath)
	return old, new, changed, err
}

// checkConfig refuses to go on when config.toml does not parse: cx never
// rewrites a file it cannot read (and Codex would not start with it either).
func (in *Installer) checkConfig() error {
	data, err := os.ReadFile(in.ConfigPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", in.ConfigPath(), err)
	}
	var v map[string]any
	if _, err := toml.Decode(string(data), &v); err != nil {
		return &ParseError{in.ConfigPath(), err}
	}
	return nil
}

// Result says what Install or Uninstall did.
type Result struct {
	Changed  bool
	Trusted  []string // trust keys recorded
	Warnings []string
	// ConfigCreated (Uninstall): config.toml did not exist before cx's
	// first install; RemoveEmptyConfig takes it away once nothing is in it.
	ConfigCreated bool
	// FileRemoved (Uninstall): hooks.json was cx's own (install created
	// it and nothing else is in it) and is gone; NoFile: there was none.
	FileRemoved, NoFile bool
}

// Install writes cx's entries (atomically, with a backup of the previous
// file as hooks.json.bak) and records their trust where Codex requires it.
func (in *Installer) Install(ctx context.Context) (Result, error) {
	var res Result
	old, out, changed, err := in.Plan()
	if err != nil {
		return res, err
	}
	// A second handler of cx's that the merge takes out (dedupe) shifts the
	// positional trust keys of the hooks after it: their trust is read
	// before and recorded again after, as uninstall does.
	var before []codex.Hook
	if _, dup, _ := dedupe(in.HooksPath(), old, in.CXPath); changed && dup && in.Trust {
		if before, err = in.listHooks(ctx); err != nil {
			res.Warnings = append(res.Warnings, "could not read hook trust before taking out a second cx entry: "+err.Error())
		}
	}
	if changed {
		_, cerr := os.Stat(in.ConfigPath())
		hadConfig := !errors.Is(cerr, fs.ErrNotExist)
		st := state{HooksPath: in.HooksPath(), Original: string(old), HadOriginal: old != nil, ConfigTables: in.trustTables(), HadConfig: &hadConfig}
		if prev, err := in.readState(); err == nil && prev.InstalledSum == sum(old) {
			st = prev // a repair of cx's own install: the original stays the first one
		}
		if old != nil {
			if err := fsutil.WriteAtomic(in.HooksPath()+".bak", old, 0o600); err != nil {
				return res, err
			}
		}
		if err := fsutil.WriteAtomic(in.HooksPath(), out, 0o600); err != nil {
			return res, err
		}
		st.InstalledSum = sum(out)
		if err := in.writeState(st); err != nil {
			return res, err
		}
		res.Changed = true
	}
	if in.Trust {
		keys, err := in.trustOurs(ctx)
		if err != nil {
			return res, fmt.Errorf("record hook trust: %w", err)
		}
		res.Trusted = keys
		if before != nil {
			if err := in.keepTrust(ctx, before); err != nil {
				res.Warnings = append(res.Warnings, "re-recording the trust of shifted hooks: "+err.Error())
			}
		}
	}
	return res, nil
}

func (in *Installer) readState() (state, error) {
	var st state
	data, err := os.ReadFile(in.statePath())
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(data, &st)
	return st, err
}

func (in *Installer) writeState(st state) error {
	if err := os.MkdirAll(in.StateDir, 0o700); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(st, "", "  ")
	return fsutil.WriteAtomic(in.statePath(), data, 0o600)
}

// inspect reads hooks.json (and, with trust, asks Codex) without changing anything.
func (in *Installer) inspect(ctx context.Context) (Status, error) {
	st, err := in.inspectFile()
	if err != nil {
		return st, err
	}
	if in.Trust && len(st.Installed) > 0 {
		err = in.withHooks(ctx, func(_ *codex.Client, hooks []codex.Hook) error {
			for _, h := range hooks {
				if h.SourcePath == in.HooksPath() && isOurs(h.Command, codex.EventName(h.EventName), in.CXPath) {
					st.Trust[codex.EventName(h.EventName)] = h.TrustStatus
				}
			}
			return nil
		})
	}
	return st, err
}

// inspectFile is inspect from hooks.json alone.
func (in *Installer) inspectFile() (Status, error) {
	st := Status{Trust: map[string]string{}}
	data, err := os.ReadFile(in.HooksPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	found := map[string]string{}
	if len(bytes.TrimSpace(data)) > 0 {
		root, err := parseSpans(data)
		if err != nil {
			return st, &ParseError{in.HooksPath(), err}
		}
		hooks := root.get("hooks")
		for _, e := range Entries {
			for _, g := range hooks.get(e.Event).elemsOrNil() {
				for _, h := range g.get("hooks").elemsOrNil() {
					if c := h.get("command"); c != nil && isOurs(c.str, e.Event, in.CXPath) {
						found[e.Event] = c.str
					}
				}
			}
		}
	}
	for _, e := range Entries {
		c, ok := found[e.Event]
		switch {
		case !ok:
			st.Missing = append(st.Missing, e.Event)
		case c != Command(in.CXPath, e.Event):
			st.WrongPath = append(st.WrongPath, e.Event)
			st.Installed = append(st.Installed, e.Event)
		default:
			st.Installed = append(st.Installed, e.Event)
		}
	}
	return st, nil
}

// Uninstall removes exactly what install added. When the file is as cx
// left it, the original bytes come back; otherwise cx's entries are cut out
// as text and everything else stays. Hooks whose positional trust key
// shifted keep the trust they had; cx's own trust entries are removed.
func (in *Installer) Uninstall(ctx context.Context) (Result, error) {
	var res Result
	cur, err := os.ReadFile(in.HooksPath())
	if errors.Is(err, fs.ErrNotExist) {
		res.NoFile = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if err := in.checkConfig(); err != nil {
		return res, err
	}
	st, stErr := in.readState()
	var before []codex.Hook
	if in.Trust {
		if before, err = in.listHooks(ctx); err != nil {
			res.Warnings = append(res.Warnings, "could not read hook trust before removal: "+err.Error())
		}
	}
	var out []byte
	removed := false
	switch {
	case stErr == nil && st.InstalledSum == sum(cur):
		out = []byte(st.Original)
		if !st.HadOriginal {
			if err := os.Remove(in.HooksPath()); err != nil {
				return res, err
			}
			out, removed = nil, true
		}
	default:
		created := map[string]bool{}
		if stErr == nil && st.HadOriginal {
			if root, err := parseSpans([]byte(st.Original)); err == nil {
				for _, e := range Entries {
					if root.get("hooks").get(e.Event) == nil {
						created[e.Event] = true
					}
				}
			}
		}
		out, _, err = Remove(in.HooksPath(), cur, in.CXPath, func(ev string) bool { return created[ev] })
		if err != nil {
			return res, err
		}
	}
	// No backup of its own: uninstall only takes cx's entries out, and
	// what else the file holds stays in it.
	if out != nil && !bytes.Equal(out, cur) {
		if err := fsutil.WriteAtomic(in.HooksPath(), out, 0o600); err != nil {
			return res, err
		}
	}
	in.dropRedundantBackup(cur, out, st.Original)
	res.ConfigCreated = stErr == nil && st.HadConfig != nil && !*st.HadConfig
	// Changed: cx's entries were there to take out (a second uninstall
	// finds none, and says so).
	res.Changed = removed || (out != nil && !bytes.Equal(out, cur))
	res.FileRemoved = removed
	_ = os.Remove(in.statePath())
	if in.Trust && before != nil {
		// cx's trust entries go first: a shifted hook's new key may be one of
		// them, and its trust is re-recorded right after.
		var ourKeys []string
		for _, h := range before {
			if h.SourcePath == in.HooksPath() && isOurs(h.Command, codex.EventName(h.EventName), in.CXPath) {
				ourKeys = append(ourKeys, h.Key)
			}
		}
		if err := removeTrustEntries(in.ConfigPath(), ourKeys); err != nil {
			res.Warnings = append(res.Warnings, err.Error())
		}
		var added []string
		for _, t := range codex.TrustTables {
			if !slices.Contains(st.ConfigTables, t) {
				added = append(added, t)
			}
		}
		if err := removeEmptyTables(in.ConfigPath(), added); err != nil {
			res.Warnings = append(res.Warnings, err.Error())
		}
		if err := in.keepTrust(ctx, before); err != nil {
			res.Warnings = append(res.Warnings, "re-recording the trust of shifted hooks: "+err.Error())
		}
	}
	return res, nil
}

// dropRedundantBackup removes the hooks.json.bak an install left when it
// holds nothing the user would miss: the file as uninstall leaves it, the
// original, or either with cx's entries in it (an install's backup of a
// file cx had already written). Any other .bak is the user's, and stays.
func (in *Installer) dropRedundantBackup(cur, out []byte, original string) {
	bak, err := os.ReadFile(in.HooksPath() + ".bak")
	if err != nil {
		return
	}
	strip := func(b []byte) []byte {
		s, _, err := Remove(in.HooksPath(), b, in.CXPath, func(string) bool { return true })
		if err != nil {
			return nil
		}
		return s
	}
	known := [][]byte{out, []byte(original), strip(cur)}
	for _, b := range [][]byte{bak, strip(bak)} {
		for _, k := range known {
			if b != nil && k != nil && bytes.Equal(b, k) {
				_ = os.Remove(in.HooksPath() + ".bak")
				return
			}
		}
	}
}

// RemoveEmptyConfig removes config.toml when it holds nothing but blank
// lines — what a Codex's own `mcp remove` or cx's table edits leave of a
// file that did not exist before cx (Result.ConfigCreated).
func (in *Installer) RemoveEmptyConfig() error {
	data, err := os.ReadFile(in.ConfigPath())
	if err != nil || len(bytes.TrimSpace(data)) > 0 {
		return nil
	}
	return os.Remove(in.ConfigPath())
}
