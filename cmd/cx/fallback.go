package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"cx/hookcfg"
	"cx/inject"
	"cx/internal/codexbin"
	"cx/internal/config"
	"cx/internal/ledger"
)

// hooksActive reports whether cx's hooks will run in this CODEX_HOME: every
// entry installed for this cx binary and, where Codex requires trust, trust
// recorded for them (checked from config.toml; `cx ctl doctor` asks Codex).
func hooksActive(ctx context.Context, codexHome, self string, caps codexbin.Caps) (bool, string) {
	in := &hookcfg.Installer{CodexHome: codexHome, CXPath: self}
	st, err := in.Inspect(ctx)
	switch {
	case err != nil:
		return false, err.Error()
	case len(st.Missing) > 0:
		return false, "cx's hooks are not installed"
	case len(st.WrongPath) > 0:
		return false, "cx's hooks run another cx binary"
	}
	if caps.HasHookTrust() {
		data, _ := os.ReadFile(in.ConfigPath())
		if !strings.Contains(string(data), in.HooksPath()+":session_start:") {
			return false, "cx's hooks are not trusted"
		}
	}
	return true, ""
}

// fallbackArgs gives Codex cx's context through -c developer_instructions
// when its hooks cannot: merged with the user's own value (from their -c, or
// from config.toml), the user's -c replaced by the merged one.
func fallbackArgs(ctx context.Context, a *app, cfg config.Config, codexHome string, args []string, reason string) []string {
	db, err := ledger.Open(ctx, filepath.Join(cfg.Home, ledger.FileName), ledger.Options{})
	if err != nil {
		db = nil
	}
	block := inject.ForSessionStart(ctx, inject.Request{Home: cfg.Home, DB: db, Source: "fallback", Cwd: cwd(), MaxChars: cfg.Inject.MaxChars})
	if db != nil {
		db.Close()
	}
	if block == "" {
		return args
	}
	user, at := userDeveloperInstructions(args, codexHome)
	value := "developer_instructions=" + tomlString(inject.DeveloperInstructions(user, block))
	a.errorf("%s: giving Codex cx's context through -c developer_instructions instead (run `cx ctl install` to use hooks)", reason)
	if at >= 0 {
		out := append([]string(nil), args...)
		out[at] = value
		return out
	}
	return append([]string{"-c", value}, args...)
}

// userDeveloperInstructions finds the user's developer_instructions: the
// index of the value of their `-c developer_instructions=…` (-1 if none),
// else config.toml's.
func userDeveloperInstructions(args []string, codexHome string) (string, int) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--" {
			break
		}
		if (args[i] == "-c" || args[i] == "--config") && strings.HasPrefix(args[i+1], "developer_instructions=") {
			raw := strings.TrimPrefix(args[i+1], "developer_instructions=")
			var v struct {
				V string `toml:"v"`
			}
			if _, err := toml.Decode("v = "+raw, &v); err == nil {
				return v.V, i + 1
			}
			return raw, i + 1 // Codex takes an unparsable value as a literal string
		}
	}
	var cfg struct {
		DeveloperInstructions string `toml:"developer_instructions"`
	}
	if data, err := os.ReadFile(filepath.Join(codexHome, "config.toml")); err == nil {
		_, _ = toml.Decode(string(data), &cfg)
	}
	return cfg.DeveloperInstructions, -1
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
