// Package setup is cx's place in Codex and its health, as reports cmd/cx
// renders: `cx ctl install` (hooks, their trust, the MCP server, what
// `import` would take), `uninstall`, and `doctor` (cx's config, the Codex
// found, the hooks and the MCP server hookcfg checks, the ledger, runs
// that could not be recorded, the sinks). It decides and does; it prints
// nothing.
package setup

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"cx/history"
	"cx/hookcfg"
	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/mcpproto"
	"cx/internal/sinks"
	"cx/lifecycle"
)

// Setup is what install, uninstall and doctor share: cx's config, the
// installer for Codex's home (or the one named), and the Codex found.
type Setup struct {
	Cfg      config.Config
	In       *hookcfg.Installer
	Bin      codex.Binary
	Caps     codex.Caps
	CodexErr error // no Codex: hooks can be written, not trusted
	getenv   func(string) (string, bool)
}

// Open finds Codex and builds the installer for codexHome ("" : Codex's
// own). The Setup is returned, with its Codex, even when the installer
// cannot be built.
func Open(ctx context.Context, cfg config.Config, codexHome string, getenv func(string) (string, bool)) (*Setup, error) {
	s := &Setup{Cfg: cfg, getenv: getenv}
	s.Bin, s.Caps, s.CodexErr = codex.FindFor(ctx, cfg.Codex.Bin, cfg.Home, getenv)
	var err error
	s.In, err = hookcfg.New(codexHome, filepath.Join(cfg.Home, "install"), getenv, s.Bin, s.Caps, s.CodexErr)
	if err == nil {
		s.In.CXHome = cfg.Home
	}
	return s, err
}

// Report is what install and uninstall did, as `--json` prints it.
type Report struct {
	HooksPath string   `json:"hooks_path"`
	Changed   bool     `json:"changed"`
	DryRun    bool     `json:"dry_run,omitempty"`
	Diff      string   `json:"diff,omitempty"`
	Backup    string   `json:"backup,omitempty"`
	Trusted   []string `json:"trusted"`
	Codex     string   `json:"codex_version,omitempty"`
	MCP       string   `json:"mcp,omitempty"` // cx's MCP server: registered, unchanged, removed, skipped
	// HooksFile (uninstall): "removed" — hooks.json was cx's own and is
	// gone; "absent" — there was none.
	HooksFile string   `json:"hooks_file,omitempty"`
	Import    int      `json:"import,omitempty"` // sessions `cx ctl import` would archive
	Warnings  []string `json:"warnings"`
	// Said are the lines for the user's stderr, in the order they arose
	// ("warning: …", "note: …").
	Said []string `json:"-"`
	// Hint is what to do about a failed install, beside its error.
	Hint string `json:"-"`
}

func (r *Report) warn(prefix, json, said string) {
	r.Warnings = append(r.Warnings, json)
	r.Said = append(r.Said, prefix+said)
}

// InstallOptions qualify an install.
type InstallOptions struct {
	DryRun bool // the change to hooks.json, written nowhere
	NoMCP  bool // leave cx's MCP server unregistered
}

// Install installs cx's hooks (and trusts them through Codex's app-server
// where Codex asks for trust), registers cx's MCP server, and counts the
// sessions `cx ctl import` would archive.
func (s *Setup) Install(ctx context.Context, o InstallOptions) (Report, error) {
	in := s.In
	r := Report{HooksPath: in.HooksPath(), DryRun: o.DryRun, Trusted: []string{}, Warnings: []string{}, Codex: s.Caps.Version}
	if o.DryRun {
		var err error
		r.Diff, r.Changed, err = in.PlanDiff()
		return r, err
	}
	if s.CodexErr != nil {
		w := fmt.Sprintf("%v: hooks are written, but their trust cannot be recorded without Codex", s.CodexErr)
		r.warn("warning: ", w, w)
	}
	for _, c := range installNotes(s.Cfg, in.CodexHome, s.getenv) {
		w := c.Detail
		if c.Fix != "" {
			w += "; " + c.Fix
		}
		r.warn("note: ", w, w)
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	defer in.KeepConfigMode()()
	res, err := in.Install(ictx)
	if err != nil {
		if in.Trust && res.Changed {
			r.Hint = fmt.Sprintf("the hooks are in %s but not trusted: start `codex` once and choose \"Trust all\" on the \"Hooks need review\" screen (or run `cx ctl install` again)", in.HooksPath())
		}
		return r, err
	}
	r.Changed = res.Changed
	r.Trusted = append(r.Trusted, res.Trusted...)
	for _, w := range res.Warnings {
		r.warn("warning: ", w, w)
	}
	r.MCP = "skipped (--no-mcp)"
	if !o.NoMCP {
		if changed, err := in.InstallMCP(ictx); err != nil {
			r.MCP = "not registered: " + err.Error()
			r.warn("warning: ", "mcp: "+err.Error(), "cx's MCP server: "+err.Error())
		} else if r.MCP = "unchanged"; changed {
			r.MCP = "registered"
		}
	}
	r.Import = importable(ictx, s.Cfg, in.CodexHome)
	if _, err := os.Stat(in.HooksPath() + ".bak"); err == nil && res.Changed {
		r.Backup = in.HooksPath() + ".bak"
	}
	return r, nil
}

// importable counts the sessions of codexHome `cx ctl import` would take
// (0, quietly, when the ledger cannot be read: doctor says why).
func importable(ctx context.Context, cfg config.Config, codexHome string) int {
	db, err := ledger.Open(ctx, cfg.Home, ledger.Writer, ledger.Options{})
	if err != nil {
		return 0
	}
	defer db.Close()
	res, err := history.Import(ctx, history.State{DB: db, Cfg: cfg, M: lifecycle.New(cfg, db, sinks.Build)}, history.ImportOptions{CodexHome: codexHome, DryRun: true})
	if err != nil {
		return 0
	}
	return res.Remaining
}

// Uninstall removes cx's hooks and MCP server, and the config.toml cx
// created if it is empty again.
func (s *Setup) Uninstall(ctx context.Context) (Report, error) {
	in := s.In
	uctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	r := Report{HooksPath: in.HooksPath(), Trusted: []string{}, Warnings: []string{}}
	defer in.KeepConfigMode()()
	res, err := in.Uninstall(uctx)
	if err != nil {
		return r, err
	}
	r.Changed = res.Changed
	switch {
	case res.FileRemoved:
		r.HooksFile = "removed"
	case res.NoFile:
		r.HooksFile = "absent"
	}
	warnings := res.Warnings
	r.MCP = "none"
	if removed, err := in.UninstallMCP(uctx); err != nil {
		warnings = append(warnings, "mcp: "+err.Error())
	} else if removed {
		r.MCP = "removed"
	}
	if res.ConfigCreated {
		if err := in.RemoveEmptyConfig(); err != nil {
			warnings = append(warnings, err.Error())
		}
	}
	for _, w := range warnings {
		r.warn("warning: ", w, w)
	}
	return r, nil
}

// WriteInstall is what `cx ctl install` prints of r (s the setup it ran).
func (r Report) WriteInstall(w io.Writer, s *Setup) {
	if r.DryRun {
		if !r.Changed {
			fmt.Fprintf(w, "%s: cx's hooks are already installed; nothing to change\n", r.HooksPath)
			return
		}
		fmt.Fprint(w, r.Diff)
		return
	}
	if r.Changed {
		fmt.Fprintf(w, "installed cx's hooks in %s\n", r.HooksPath)
		if r.Backup != "" {
			fmt.Fprintf(w, "the previous file is kept as %s\n", r.Backup)
		}
	} else {
		fmt.Fprintf(w, "cx's hooks are already in %s\n", r.HooksPath)
	}
	switch {
	case s.In.Trust:
		fmt.Fprintf(w, "trusted %d hook(s) through Codex %s's app-server\n", len(r.Trusted), s.Caps.Version)
	case s.CodexErr == nil:
		fmt.Fprintf(w, "Codex %s runs hooks without a trust step\n", s.Caps.Version)
	}
	fmt.Fprintf(w, "MCP server %q (search from inside Codex): %s\n", mcpproto.Name, r.MCP)
	if r.Import > 0 {
		fmt.Fprintf(w, "%s not archived yet; `cx ctl import` makes them searchable\n", cli.Count(r.Import, "earlier Codex session"))
	}
}

// WriteUninstall is what `cx ctl uninstall` prints of r.
func (r Report) WriteUninstall(w io.Writer) {
	switch {
	case r.HooksFile == "removed":
		fmt.Fprintf(w, "removed %s: cx's install created it and nothing else was in it\n", r.HooksPath)
	case r.HooksFile == "absent":
		fmt.Fprintf(w, "no %s: nothing to remove\n", r.HooksPath)
	case r.Changed:
		fmt.Fprintf(w, "removed cx's hooks from %s\n", r.HooksPath)
	default:
		fmt.Fprintf(w, "no hooks of cx's in %s: nothing to remove\n", r.HooksPath)
	}
	if r.MCP == "removed" {
		fmt.Fprintf(w, "removed cx's MCP server %q from Codex's config\n", mcpproto.Name)
	}
}
