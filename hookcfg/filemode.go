package hookcfg

import "os"

// KeepConfigMode notes config.toml's file mode and returns what puts it
// back: Codex's own config writers (trust through its app-server, `codex mcp
// add|remove`) write the file 0600 whatever it was, and the user's file
// keeps the mode the user gave it.
func (in *Installer) KeepConfigMode() func() {
	fi, err := os.Stat(in.ConfigPath())
	if err != nil {
		return func() {}
	}
	mode := fi.Mode().Perm()
	return func() {
		if now, err := os.Stat(in.ConfigPath()); err == nil && now.Mode().Perm() != mode {
			_ = os.Chmod(in.ConfigPath(), mode)
		}
	}
}
