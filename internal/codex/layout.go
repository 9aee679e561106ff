package codex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"cx/internal/proc"
	"cx/internal/rollout"

	_ "modernc.org/sqlite" // the logs and goals databases
)

// Codex's home holds, per session, a rollout filed by local start day
// (sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl), moved to
// archived_sessions/ when archived; 0.169 adds a writer lock per loaded
// thread (thread-writer-locks/<id>.lock) and logs each process's threads
// to a logs_<n>.sqlite database.

// rolloutName is the name Codex gives a rollout:
// rollout-<local start time>-<session id>.jsonl.
var rolloutName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl(\.zst)?$`)
})

// RolloutID is the session id a rollout's path names ("" if it is none).
func RolloutID(path string) string {
	if m := rolloutName().FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1]
	}
	return ""
}

// archivedDir is where Codex moves archived sessions' rollouts.
func archivedDir(home string) string { return filepath.Join(home, "archived_sessions") }

// FindRollout finds a session's rollout: where it was recorded, else —
// Codex moves an archived thread's rollout to archived_sessions/, same
// name — there, else by its id under sessions/ or archived_sessions/.
// "" when there is none (a session with no turn).
func FindRollout(codexHome, id, recorded string) string {
	if recorded != "" {
		plain := strings.TrimSuffix(recorded, ".zst")
		for _, p := range []string{recorded, plain, plain + ".zst"} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		if codexHome != "" {
			for _, p := range []string{plain, plain + ".zst"} {
				moved := filepath.Join(archivedDir(codexHome), filepath.Base(p))
				if _, err := os.Stat(moved); err == nil {
					return moved
				}
			}
		}
	}
	if codexHome == "" || id == "" {
		return ""
	}
	// Plain before compressed: while Codex resumes a compressed thread both
	// exist, and the plain one is the one being written.
	for _, ext := range []string{".jsonl", ".jsonl.zst"} {
		for _, pattern := range []string{
			filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+ext),
			filepath.Join(codexHome, "archived_sessions", "rollout-*-"+id+ext),
			filepath.Join(codexHome, "archived_sessions", "*", "*", "*", "rollout-*-"+id+ext),
		} {
			if matches, _ := filepath.Glob(pattern); len(matches) > 0 {
				return matches[len(matches)-1]
			}
		}
	}
	return ""
}

// RolloutsSince lists, by session id, the rollouts in home touched at or
// after since: in the day folders Codex files them under from the day
// before since to tomorrow (local time; a day each side for clocks and
// zones), and in archived_sessions/. One directory read per day: the cost
// does not grow with the history. A zero since lists every rollout (the
// whole sessions/ tree: `cx ctl import`).
func RolloutsSince(home string, since time.Time) map[string]string {
	out := map[string]string{}
	if home == "" {
		return out
	}
	add := func(dir string, e fs.DirEntry) {
		id := RolloutID(e.Name())
		if id == "" || e.IsDir() {
			return
		}
		if prev, dup := out[id]; dup && !(strings.HasSuffix(prev, ".zst") && !strings.HasSuffix(e.Name(), ".zst")) {
			return // one thread once: its plain rollout (being resumed) over a compressed sibling
		}
		if fi, err := e.Info(); err == nil && !fi.ModTime().Before(since) {
			out[id] = filepath.Join(dir, e.Name())
		}
	}
	dirs := []string{archivedDir(home)}
	if since.IsZero() {
		_ = filepath.WalkDir(filepath.Join(home, "sessions"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				add(filepath.Dir(path), d)
			}
			return nil // an unreadable folder has nothing to list
		})
	} else {
		for day := since.Local().AddDate(0, 0, -1); !day.After(time.Now().AddDate(0, 0, 1)); day = day.AddDate(0, 0, 1) {
			dirs = append(dirs, filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02")))
		}
	}
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			add(d, e)
		}
	}
	return out
}

const threadLocksDir = "thread-writer-locks"

// lockFileRE names a thread's writer lock file. Codex 0.169 also keeps its
// own .coordination.lock there (seen in the real-Codex scenarios): a name
// starting with a dot is never a thread.
var lockFileRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`/` + threadLocksDir + `/([^/.][^/]*)\.lock$`) })

// LockFileThread is the thread id a writer lock file's path names.
func LockFileThread(path string) (string, bool) {
	if m := lockFileRE().FindStringSubmatch(path); m != nil {
		return m[1], true
	}
	return "", false
}

// ThreadLocks lists the thread ids with a writer lock file in home.
func ThreadLocks(home string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(home, threadLocksDir))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok && !strings.HasPrefix(id, ".") {
			out[id] = true
		}
	}
	return out
}

// ThreadLocked reports whether a live process holds a lock on the
// thread's writer lock file: 0.169's Codex flock(2)s it while the thread is
// loaded (codex-facts: "creates and flocks thread-writer-locks/<id>.lock"),
// so a held lock means the session is live. It is asked of the kernel
// without taking the lock, which could stand in Codex's way: lockHolder is
// per system. The kernel may let a lock go a moment after its process is
// gone (a multi-threaded process's leader is a zombie while its other
// threads still hold its files, and the last close can be deferred past
// the exit): a lock whose holder is known and gone is not held.
func ThreadLocked(home, id string) bool {
	pid, held := lockHolder(filepath.Join(home, threadLocksDir, id+".lock"))
	return held && (pid == 0 || proc.Alive(pid, 0))
}

// writerLocksSince is the first Codex version seen keeping a writer lock
// per loaded thread (0.169; 0.128 keeps none). Versions between are not
// known to, so they are judged as the older ones: by the rollout's age.
const writerLocksSince = "0.169.0"

// KeepsWriterLocks reports whether Codex at version keeps a writer lock
// per loaded thread.
func KeepsWriterLocks(version string) bool {
	return version != "" && CompareVersions(version, writerLocksSince) >= 0
}

// Liveness is whether a rollout may still be written to, and how that is
// known.
type Liveness struct {
	Live bool
	// Until, when Live and not zero, is when the rollout counts as done if
	// nothing writes it meanwhile: Codex keeps no writer lock, so only its
	// age tells.
	Until time.Time
	// ByLock: the writer lock told (a Codex that keeps them), not the
	// rollout's age — not live then means no Codex holds the thread.
	ByLock bool
}

// RolloutLiveness judges whether Codex may still write a thread's
// rollout: a held writer lock means live; a Codex version that keeps
// writer locks (cliVersion, from the rollout's session_meta) and holds
// none for the thread is done with it — at once, whatever the rollout's
// age; a version without locks is live until the rollout has been left
// alone for window.
func RolloutLiveness(home, id, cliVersion string, mtime, now time.Time, window time.Duration) Liveness {
	if ThreadLocked(home, id) {
		return Liveness{Live: true, ByLock: true}
	}
	if KeepsWriterLocks(cliVersion) {
		return Liveness{ByLock: true}
	}
	if until := mtime.Add(window); now.Before(until) {
		return Liveness{Live: true, Until: until}
	}
	return Liveness{}
}

// LogWatch reads the thread ids Codex logs for a process in
// $CODEX_HOME/logs_*.sqlite (rows of process_uuid "pid:<pid>:…"),
// incrementally by row id: each look reads only the rows written since the
// last, whoever wrote them — the database is every Codex's of that home,
// and a look that started again from the last row of its own process read
// all the others' rows on every look. Not safe for concurrent use.
type LogWatch struct {
	home  string
	since time.Time // the process's start: rows logged before are not its own
	db    *sql.DB
	// top and rows are the two statements of every look, prepared once
	// (preparing them again was half a look's CPU).
	top, rows *sql.Stmt
	last      int64 // rows up to this id have been read
	found     bool  // last was set from since
}

// NewLogWatch watches home's logs database (opened on first use: Codex
// creates it after it starts) for a process started at since (zero: read
// the database from its first row).
func NewLogWatch(home string, since time.Time) *LogWatch {
	return &LogWatch{home: home, since: since}
}

// open opens the database once it exists; false while it does not.
func (w *LogWatch) open() bool {
	if w.db != nil {
		return true
	}
	if w.home == "" {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(w.home, "logs_*.sqlite"))
	if len(matches) == 0 {
		return false
	}
	db, err := sql.Open("sqlite", "file:"+matches[len(matches)-1]+"?mode=ro&_pragma=busy_timeout(200)")
	if err != nil {
		return false
	}
	db.SetMaxOpenConns(1)
	top, err := db.Prepare(`SELECT coalesce(max(id), 0) FROM logs`)
	if err != nil {
		db.Close()
		return false
	}
	rows, err := db.Prepare(`SELECT thread_id FROM logs WHERE id > ? AND id <= ? AND thread_id IS NOT NULL AND thread_id != '' AND process_uuid LIKE ?`)
	if err != nil {
		top.Close()
		db.Close()
		return false
	}
	w.db, w.top, w.rows = db, top, rows
	return true
}

// start sets last below every row logged since the process started: the
// least id of the rows whose time is since or later (Codex's index on the
// rows' time finds them without reading the older ones; "id + 0" keeps
// SQLite from walking the ids instead). Not the first row in time: Codex
// writes its rows from a queue, every process its own, so a row another
// process logged earlier may be written after one of this process's.
func (w *LogWatch) start(ctx context.Context) error {
	if w.found || w.since.IsZero() {
		w.found = true
		return nil
	}
	var first sql.NullInt64
	// A second early: a row's time is whole seconds.
	if err := w.db.QueryRowContext(ctx, `SELECT min(id + 0) FROM logs WHERE ts >= ?`, w.since.Unix()-1).Scan(&first); err != nil {
		return err
	}
	if !first.Valid {
		// Nothing logged since: every row there is is older.
		var top int64
		if err := w.top.QueryRowContext(ctx).Scan(&top); err != nil {
			return err
		}
		first.Int64 = top + 1
	}
	w.last, w.found = max(w.last, first.Int64-1), true
	return nil
}

// Threads returns the thread ids logged for pid since the last call.
func (w *LogWatch) Threads(pid int) []string {
	if !w.open() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if w.start(ctx) != nil {
		return nil
	}
	// The rows up to top are read now, every process's: the next look
	// starts after them. Read first, so a row written during the look is
	// left for the next.
	var top int64
	if w.top.QueryRowContext(ctx).Scan(&top) != nil {
		return nil
	}
	rows, err := w.rows.QueryContext(ctx, w.last, top, fmt.Sprintf("pid:%d:%%", pid))
	if err != nil {
		return nil
	}
	defer rows.Close()
	seen := map[string]bool{}
	var out []string
	for rows.Next() {
		var tid string
		if rows.Scan(&tid) != nil {
			continue
		}
		if !seen[tid] && !strings.ContainsAny(tid, " /") {
			seen[tid] = true
			out = append(out, tid)
		}
	}
	if rows.Err() == nil {
		w.last = max(w.last, top)
	}
	return out
}

// LoggedByOther reports whether Codex's log database names thread id under
// a process other than pid (0.128 logs every thread of a process, turnless
// ones too): that thread is another Codex's.
func (w *LogWatch) LoggedByOther(id string, pid int) bool {
	if !w.open() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var one int
	err := w.db.QueryRowContext(ctx, `SELECT 1 FROM logs WHERE thread_id = ? AND process_uuid NOT LIKE ? LIMIT 1`, id, fmt.Sprintf("pid:%d:%%", pid)).Scan(&one)
	return err == nil
}

// Close closes the database.
func (w *LogWatch) Close() error {
	if w.db == nil {
		return nil
	}
	w.top.Close()
	w.rows.Close()
	return w.db.Close()
}

// StoredGoal is a thread's goal as Codex's goal store holds it now
// (goals_*.sqlite, table thread_goals: objective and status): known is
// false when there is no such store to ask; a nil goal with known true
// means the thread has none — for a thread that had one, it was cleared
// (`/goal clear` may leave no line in the rollout).
func StoredGoal(home, threadID string) (g *rollout.Goal, known bool) {
	matches, _ := filepath.Glob(filepath.Join(home, "goals_*.sqlite"))
	if home == "" || len(matches) == 0 {
		return nil, false
	}
	db, err := sql.Open("sqlite", "file:"+matches[len(matches)-1]+"?mode=ro&_pragma=busy_timeout(200)")
	if err != nil {
		return nil, false
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var obj, status string
	err = db.QueryRowContext(ctx, `SELECT objective, status FROM thread_goals WHERE thread_id = ?`, threadID).Scan(&obj, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, true
	case err != nil:
		return nil, false
	}
	return &rollout.Goal{Objective: obj, Status: status}, true
}
