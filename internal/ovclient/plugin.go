package ovclient

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/BurntSushi/toml"
)

// Plugin is what cx found of the OpenViking Codex plugin
// (examples/codex-memory-plugin in the OpenViking repository), which writes
// the same "cx-<id>" sessions cx's sink writes.
type Plugin struct {
	// Where lists each trace found: its hooks in hooks.json, its entry in
	// config.toml's [plugins].
	Where []string
	// CaptureOff: OPENVIKING_AUTO_CAPTURE is false in the environment Codex
	// inherits from cx, so the plugin captures nothing.
	CaptureOff bool
}

// PluginChoices is what the user can do when the plugin and cx's
// openviking sink would both write the same sessions.
const PluginChoices = "turn the plugin's capture off (OPENVIKING_AUTO_CAPTURE=false, or remove its hooks), " +
	"or drop openviking from cx's sinks, or set [openviking] allow_with_plugin = true to let both write; then `cx ctl retry --all`"

// Active reports whether the plugin is installed and enabled for Codex.
func (p Plugin) Active() bool { return len(p.Where) > 0 }

// Capturing reports whether the plugin would write turns to OpenViking.
func (p Plugin) Capturing() bool { return p.Active() && !p.CaptureOff }

// pluginScripts are the plugin's hook scripts (scripts/*.mjs), and its
// hook tag (scripts/install-codex-hooks.mjs HOOK_TAG).
var pluginScripts = []string{"auto-capture.mjs", "auto-recall.mjs", "pre-compact-capture.mjs", "session-end.mjs",
	"session-start-commit.mjs", "openviking-codex-memory-plugin"}

func isPluginHook(command, status string) bool {
	for _, s := range pluginScripts {
		if strings.Contains(command, s) || strings.HasPrefix(status, s) {
			return true
		}
	}
	return false
}

// pluginName is the plugin's name in its .codex-plugin/plugin.json; Codex
// keys installed plugins "<name>@<marketplace>".
const pluginName = "openviking-memory"

// pluginTraces is DetectPlugin's Where, read again only when hooks.json or
// config.toml changed: a sink asks before every append and commit, and
// decoding Codex's config.toml each time was a tenth of the outbox's work
// in the chaos run.
func pluginTraces(codexHome string) []string {
	hooksPath, configPath := filepath.Join(codexHome, "hooks.json"), filepath.Join(codexHome, "config.toml")
	stamp := fileStamp(hooksPath) + "|" + fileStamp(configPath)
	pluginSeen.Lock()
	seen, ok := pluginSeen.m[codexHome]
	pluginSeen.Unlock()
	if ok && seen.stamp == stamp {
		return slices.Clone(seen.where)
	}
	var where []string
	if data, err := os.ReadFile(hooksPath); err == nil {
		var hf struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command       string `json:"command"`
					StatusMessage string `json:"statusMessage"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if json.Unmarshal(data, &hf) == nil {
			for ev, groups := range hf.Hooks {
				for _, g := range groups {
					for _, h := range g.Hooks {
						if isPluginHook(h.Command, h.StatusMessage) {
							where = append(where, fmt.Sprintf("its %s hook in %s", ev, hooksPath))
						}
					}
				}
			}
		}
	}
	var cfg struct {
		Plugins map[string]struct {
			Enabled *bool `toml:"enabled"`
		} `toml:"plugins"`
	}
	if _, err := toml.DecodeFile(configPath, &cfg); err == nil {
		for key, pl := range cfg.Plugins {
			if strings.HasPrefix(key, pluginName+"@") && (pl.Enabled == nil || *pl.Enabled) {
				where = append(where, fmt.Sprintf("plugin %q enabled in %s", key, configPath))
			}
		}
	}
	sort.Strings(where)
	pluginSeen.Lock()
	if pluginSeen.m == nil {
		pluginSeen.m = map[string]pluginLook{}
	}
	pluginSeen.m[codexHome] = pluginLook{stamp, where}
	pluginSeen.Unlock()
	return slices.Clone(where)
}

// pluginSeen is what pluginTraces read last in each Codex home.
var pluginSeen struct {
	sync.Mutex
	m map[string]pluginLook
}

type pluginLook struct {
	stamp string // the files' fileStamp when read
	where []string
}

// fileStamp names a file's version: inode, size and modification time
// ("-" when it cannot be read).
func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "-"
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = uint64(st.Ino)
	}
	return fmt.Sprintf("%d:%d:%d", ino, fi.Size(), fi.ModTime().UnixNano())
}

// DetectPlugin looks for the plugin in a Codex home: hook commands of its
// scripts in hooks.json (how scripts/install-codex-hooks.mjs installs it)
// and an enabled [plugins."openviking-memory@…"] table in config.toml (how
// Codex installs it as a plugin).
func DetectPlugin(codexHome string, getenv func(string) (string, bool)) Plugin {
	var p Plugin
	if codexHome == "" {
		return p
	}
	p.Where = pluginTraces(codexHome)
	if v, ok := getenv("OPENVIKING_AUTO_CAPTURE"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "0", "false", "no":
			p.CaptureOff = true
		}
	}
	return p
}
