package codex

import (
	"path/filepath"
	"time"
)

// watchDirs are the folders a thread watch watches in home at now: the
// thread locks folder, today's sessions folder, and — so that their
// creation in a fresh Codex home is seen — the folders above them.
func watchDirs(home string, now time.Time) []string {
	sessions := filepath.Join(home, "sessions")
	year := filepath.Join(sessions, now.Format("2006"))
	month := filepath.Join(year, now.Format("01"))
	return []string{
		home,
		filepath.Join(home, threadLocksDir),
		sessions, year, month,
		filepath.Join(month, now.Format("02")),
	}
}
