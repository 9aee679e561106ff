package codex

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// codexLogsSchema is the logs table and its time index as Codex 0.171.0
// creates them in $CODEX_HOME/logs_2.sqlite (read from a real home with
// sqlite3 .schema; 0.128.0's is the same).
const codexLogsSchema = `
CREATE TABLE logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    ts_nanos INTEGER NOT NULL,
    level TEXT NOT NULL,
    target TEXT NOT NULL,
    feedback_log_body TEXT,
    module_path TEXT,
    file TEXT,
    line INTEGER,
    thread_id TEXT,
    process_uuid TEXT,
    estimated_bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_logs_ts ON logs(ts DESC, ts_nanos DESC, id DESC);
CREATE INDEX idx_logs_thread_id ON logs(thread_id);`

type codexLog struct {
	db *sql.DB
	t  *testing.T
}

func newCodexLog(t *testing.T, home string) codexLog {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(home, "logs_2.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(codexLogsSchema); err != nil {
		t.Fatal(err)
	}
	return codexLog{db, t}
}

func (l codexLog) add(at time.Time, pid int, thread string) {
	l.t.Helper()
	var tid any
	if thread != "" {
		tid = thread
	}
	if _, err := l.db.Exec(`INSERT INTO logs (ts, ts_nanos, level, target, thread_id, process_uuid) VALUES (?, ?, 'INFO', 'codex_core', ?, ?)`,
		at.Unix(), at.Nanosecond(), tid, fmt.Sprintf("pid:%d:0f8e", pid)); err != nil {
		l.t.Fatal(err)
	}
}

// A process's watch reads its own threads once each, never a row logged
// before it started (an earlier process with the same pid), and each look
// starts after every row the last one read, whoever logged them.
func TestLogWatchReadsEachRowOnce(t *testing.T) {
	home := t.TempDir()
	l := newCodexLog(t, home)
	start := time.Now().Add(-time.Minute)
	l.add(start.Add(-time.Hour), 42, "old-thread-of-a-reused-pid")
	for range 50 {
		l.add(start.Add(-time.Hour), 7, "another")
	}
	w := NewLogWatch(home, start)
	defer w.Close()
	if got := w.Threads(42); len(got) != 0 {
		t.Fatalf("before its first row: %v", got)
	}
	l.add(start.Add(time.Second), 42, "")
	l.add(start.Add(time.Second), 42, "t1")
	l.add(start.Add(time.Second), 9, "not-ours")
	l.add(start.Add(2*time.Second), 42, "t1")
	if got := w.Threads(42); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("first look: %v", got)
	}
	for range 20 {
		l.add(start.Add(3*time.Second), 9, "not-ours")
	}
	if got := w.Threads(42); len(got) != 0 {
		t.Fatalf("a look with none of its rows: %v", got)
	}
	var top int64
	if err := l.db.QueryRow(`SELECT max(id) FROM logs`).Scan(&top); err != nil {
		t.Fatal(err)
	}
	if w.last != top {
		t.Fatalf("the look read up to row %d; the database has %d: the next look reads them again", w.last, top)
	}
	l.add(start.Add(4*time.Second), 42, "t2")
	if got := w.Threads(42); !slices.Equal(got, []string{"t2"}) {
		t.Fatalf("third look: %v", got)
	}
}

// A row logged in the second the process started is still its own, and so
// is one written before another process's row of an earlier time (each
// Codex writes its rows from a queue of its own); a watch with no start
// reads from the first row.
func TestLogWatchStart(t *testing.T) {
	home := t.TempDir()
	l := newCodexLog(t, home)
	start := time.Now()
	l.add(start.Add(-time.Hour), 42, "reused-pid")
	l.add(start.Add(-time.Second), 42, "queued")
	l.add(start.Add(time.Second), 42, "ours")
	l.add(start.Add(-1500*time.Millisecond), 7, "flushed-late") // the first in time near the start, written after ours
	for _, c := range []struct {
		since time.Time
		want  []string
	}{
		{start, []string{"queued", "ours"}},
		{time.Time{}, []string{"reused-pid", "queued", "ours"}},
	} {
		w := NewLogWatch(home, c.since)
		if got := w.Threads(42); !slices.Equal(got, c.want) {
			t.Errorf("since %v: %v, want %v", c.since, got, c.want)
		}
		w.Close()
	}
	empty := t.TempDir()
	newCodexLog(t, empty)
	w := NewLogWatch(empty, start)
	defer w.Close()
	if got := w.Threads(42); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
}

// A Codex that keeps writer locks is looked at by its open lock files
// alone: a thread its log rows name, with a rollout on disk, is found
// through the log database only for a Codex that keeps none.
func TestThreadsByLocksLeaveTheLogs(t *testing.T) {
	home := t.TempDir()
	l := newCodexLog(t, home)
	start := time.Now().Add(-time.Minute)
	day := filepath.Join(home, "sessions", time.Now().Format("2006/01/02"))
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(day, "rollout-2026-11-22T10-00-00-019a-logged.jsonl"), []byte("{}\n"), 0o600)
	l.add(start.Add(time.Second), 42, "019a-logged")
	for _, byLocks := range []bool{false, true} {
		w := NewLogWatch(home, start)
		d := &Threads{Home: home, Since: start, Logs: w, ByLocks: byLocks}
		_, found := d.Look(42, false, func(string) bool { return false })["019a-logged"]
		w.Close()
		if found == byLocks {
			t.Errorf("ByLocks %v: the logged thread found %v", byLocks, found)
		}
	}
}
