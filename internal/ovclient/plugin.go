package ovclient

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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

// DetectPlugin looks for the plugin in a Codex home: hook commands of its
// scripts in hooks.json (how scripts/install-codex-hooks.mjs installs it)
// and an enabled [plugins."openviking-memory@…"] table in config.toml (how
// Codex installs it as a plugin).
func DetectPlugin(codexHome string, getenv func(string) (string, bool)) Plugin {
	var p Plugin
	if codexHome == "" {
		return p
	}
	if data, err := os.ReadFile(filepath.Join(codexHome, "hooks.json")); err == nil {
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
							p.Where = append(p.Where, fmt.Sprintf("its %s hook in %s", ev, filepath.Join(codexHome, "hooks.json")))
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
	if _, err := toml.DecodeFile(filepath.Join(codexHome, "config.toml"), &cfg); err == nil {
		for key, pl := range cfg.Plugins {
			if strings.HasPrefix(key, pluginName+"@") && (pl.Enabled == nil || *pl.Enabled) {
				p.Where = append(p.Where, fmt.Sprintf("plugin %q enabled in %s", key, filepath.Join(codexHome, "config.toml")))
			}
		}
	}
	sort.Strings(p.Where)
	if v, ok := getenv("OPENVIKING_AUTO_CAPTURE"); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "0", "false", "no":
			p.CaptureOff = true
		}
	}
	return p
}
