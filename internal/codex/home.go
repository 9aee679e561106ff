package codex

import (
	"cx/internal/config"
	"os"
	"path/filepath"
	"strings"
)

// homeVar is the variable naming Codex's home.
const homeVar = "CODEX_HOME"

// Home is the CODEX_HOME Codex will use, absolute: $CODEX_HOME, else
// ~/.codex — home found as Codex finds it, $HOME else the passwd entry —
// ("" when neither can be known).
func Home(getenv func(string) (string, bool)) string {
	if v, ok := getenv(homeVar); ok && v != "" {
		if abs, err := filepath.Abs(v); err == nil {
			return abs
		}
		return v
	}
	if h, err := config.UserHome(getenv); err == nil {
		return filepath.Join(h, ".codex")
	}
	return ""
}

// HomeFlagUsage describes a --codex-home flag.
const HomeFlagUsage = "Codex's home `DIR` (default $CODEX_HOME, else ~/.codex)"

// HomeEnv is the KEY=VALUE that points a Codex process at home.
func HomeEnv(home string) string { return homeVar + "=" + home }

// Env is the environment of a Codex process cx starts, the one recipe for
// every such process: base without the keys of set and of unset; PATH with
// the npm launcher's addition and the launcher's variables (what `codex`
// itself gives the native binary); then set ("KEY=VALUE", in order).
func Env(base []string, bin Binary, set []string, unset ...string) []string {
	drop := map[string]bool{}
	for _, k := range unset {
		drop[k] = true
	}
	for _, kv := range append(append([]string(nil), bin.Env...), set...) {
		k, _, _ := strings.Cut(kv, "=")
		drop[k] = true
	}
	env := make([]string, 0, len(base)+len(bin.Env)+len(set))
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if drop[k] {
			continue
		}
		if k == "PATH" && bin.PathPrepend != "" {
			kv = "PATH=" + bin.PathPrepend + string(os.PathListSeparator) + v
		}
		env = append(env, kv)
	}
	env = append(env, bin.Env...)
	return append(env, set...)
}
