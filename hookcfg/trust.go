package hookcfg

// Hook trust in Codex's config.toml: recording cx's (through Codex's
// app-server), keeping other hooks' when their positional keys shift, and
// taking cx's trust entries and tables out again.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"cx/internal/codex"
	"cx/internal/fsutil"
)

// withHooks starts Codex's app-server, lists the hooks it sees and runs f
// with both: the one way install, doctor and uninstall ask Codex.
func (in *Installer) withHooks(ctx context.Context, f func(c *codex.Client, hooks []codex.Hook) error) error {
	c, err := codex.Start(ctx, in.Codex, in.CodexEnv)
	if err != nil {
		return err
	}
	defer c.Close()
	hooks, err := c.ListHooks(ctx, "")
	if err != nil {
		return err
	}
	return f(c, hooks)
}

// trustOurs asks Codex's app-server for the hooks it sees and trusts cx's.
func (in *Installer) trustOurs(ctx context.Context) (keys []string, err error) {
	err = in.withHooks(ctx, func(c *codex.Client, hooks []codex.Hook) error {
		var ours []codex.Hook
		for _, h := range hooks {
			if h.SourcePath == in.HooksPath() && isOurs(h.Command, codex.EventName(h.EventName), in.CXPath) {
				keys = append(keys, h.Key)
				if h.TrustStatus != "trusted" {
					ours = append(ours, h)
				}
			}
		}
		if len(keys) == 0 {
			return fmt.Errorf("cx's hooks from %s are not in the list Codex gives", in.HooksPath())
		}
		return c.Trust(ctx, ours)
	})
	return keys, err
}

// Status is what doctor reports about cx's hooks.
type Status struct {
	Installed []string          // events with cx's entry
	Missing   []string          // events without
	WrongPath []string          // cx entries pointing at another cx binary
	Trust     map[string]string // event → Codex's trust status (when Codex has trust)
}

func (in *Installer) listHooks(ctx context.Context) (hooks []codex.Hook, err error) {
	err = in.withHooks(ctx, func(_ *codex.Client, hs []codex.Hook) error { hooks = hs; return nil })
	return hooks, err
}

// keepTrust re-records trust for hooks that were trusted before cx's
// entries left and are no longer (their positional key moved).
func (in *Installer) keepTrust(ctx context.Context, before []codex.Hook) error {
	wasTrusted := map[string]bool{}
	for _, h := range before {
		if h.TrustStatus == "trusted" && !isOurs(h.Command, codex.EventName(h.EventName), in.CXPath) {
			wasTrusted[h.EventName+"\x00"+h.Command+"\x00"+h.CurrentHash] = true
		}
	}
	if len(wasTrusted) == 0 {
		return nil
	}
	return in.withHooks(ctx, func(c *codex.Client, after []codex.Hook) error {
		var fix []codex.Hook
		for _, h := range after {
			if h.TrustStatus != "trusted" && wasTrusted[h.EventName+"\x00"+h.Command+"\x00"+h.CurrentHash] {
				fix = append(fix, h)
			}
		}
		return c.Trust(ctx, fix)
	})
}

// trustTables lists which of the trust tables config.toml declares now.
func (in *Installer) trustTables() []string {
	data, _ := os.ReadFile(in.ConfigPath())
	out := []string{}
	for _, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		for _, name := range codex.TrustTables {
			if t == "["+name+"]" {
				out = append(out, name)
			}
		}
	}
	return out
}

// removeEmptyTables deletes the headers [name] of the given tables from
// config.toml when nothing lives under them (no key before the next
// header), with the blank line that set each apart — a line edit, the
// result re-parsed.
func removeEmptyTables(path string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	isHeader := func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "[") }
	var out []string
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if !slices.ContainsFunc(names, func(n string) bool { return t == "["+n+"]" }) {
			out = append(out, lines[i])
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j < len(lines) && !isHeader(lines[j]) {
			out = append(out, lines[i]) // a key or a comment lives here
			continue
		}
		// Drop the header and the blank lines after it; at the end of the
		// file, the blank line before it too.
		if j == len(lines) {
			if n := len(out); n > 0 && strings.TrimSpace(out[n-1]) == "" {
				out = out[:n-1]
			}
		}
		i = j - 1
	}
	result := strings.Join(out, "")
	if result == string(data) {
		return nil
	}
	var v map[string]any
	if _, err := toml.Decode(result, &v); err != nil {
		return fmt.Errorf("internal error: %s would not parse after removing empty trust tables: %w", path, err)
	}
	return fsutil.WriteAtomic(path, []byte(result), 0o600)
}

// removeTrustEntries deletes the trust tables (codex.TrustStateHeader) of the given
// keys from config.toml as line edits (comments and order kept) and proves
// the result still parses.
func removeTrustEntries(path string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	drop := map[string]bool{}
	for _, k := range keys {
		drop[codex.TrustStateHeader(k)] = true
	}
	result := dropTables(string(data), drop)
	var v map[string]any
	if _, err := toml.Decode(result, &v); err != nil {
		return fmt.Errorf("internal error: %s would not parse after removing cx's trust entries: %w", path, err)
	}
	if result == string(data) {
		return nil
	}
	return fsutil.WriteAtomic(path, []byte(result), 0o600)
}

// dropTables removes the tables whose header line is in drop (with their
// keys, and the blank line that separated each), keeping every other line
// as it is.
func dropTables(text string, drop map[string]bool) string {
	lines := strings.SplitAfter(text, "\n")
	var out []string
	skipping := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			skipping = drop[t]
			if skipping {
				// Also drop the blank line that separated this table.
				if n := len(out); n > 0 && strings.TrimSpace(out[n-1]) == "" {
					out = out[:n-1]
				}
				continue
			}
		}
		if skipping && t != "" && !strings.HasPrefix(t, "#") {
			continue
		}
		if skipping && t == "" {
			skipping = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "")
}
