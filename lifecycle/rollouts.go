package lifecycle

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// rolloutName is the name Codex gives a rollout:
// rollout-<local start time>-<session id>.jsonl.
var rolloutName = regexp.MustCompile(`^rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl$`)

// rolloutID is the session id a rollout's path names ("" if it is none).
func rolloutID(path string) string {
	if m := rolloutName.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1]
	}
	return ""
}

// rolloutsSince lists, by session id, the rollouts in codexHome touched at
// or after since: in the day folders Codex files them under from the day
// before since to tomorrow (local time; a day each side for clocks and
// zones), and in archived_sessions/. One directory read per day: the cost
// does not grow with the history.
func rolloutsSince(codexHome string, since time.Time) map[string]string {
	out := map[string]string{}
	if codexHome == "" {
		return out
	}
	var dirs []string
	for day := since.Local().AddDate(0, 0, -1); !day.After(time.Now().AddDate(0, 0, 1)); day = day.AddDate(0, 0, 1) {
		dirs = append(dirs, filepath.Join(codexHome, "sessions", day.Format("2006"), day.Format("01"), day.Format("02")))
	}
	dirs = append(dirs, filepath.Join(codexHome, "archived_sessions"))
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			id := rolloutID(e.Name())
			if id == "" {
				continue
			}
			if fi, err := e.Info(); err == nil && !fi.ModTime().Before(since) {
				out[id] = filepath.Join(d, e.Name())
			}
		}
	}
	return out
}

// threadLocks lists the thread ids with a writer lock file in codexHome
// (0.169 creates one per thread it loads).
func threadLocks(codexHome string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(codexHome, "thread-writer-locks"))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok {
			out[id] = true
		}
	}
	return out
}
