package lifecycle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/rollout"
)

// ReasonRecovered ends a session that cx learned of only afterwards, from
// its rollout: the run that had it could not write the ledger (a full disk,
// an I/O error, a damaged or locked ledger).
const ReasonRecovered = "recovered"

// unrecordedDir holds the breadcrumbs of runs (and hooks) that could not
// write the ledger: empty files — an inode, no data, so they land on a
// full disk too. A breadcrumb is <start unix nanos>-<base64url of the Codex
// home>.<kind> (kind "run": left by a run after its Codex exited; "hook":
// by a hook, whose Codex may still run), and each thread it names is a
// file <start unix nanos>.<thread id> beside it: only those threads are
// recovered into this CX_HOME's ledger — a Codex home may serve runs of
// other CX_HOMEs and Codex started without cx, whose sessions are not
// this ledger's.
const unrecordedDir = "unrecorded"

// Breadcrumb kinds.
const (
	CrumbRun  = "run"
	CrumbHook = "hook"
)

// markUnrecorded leaves the breadcrumb that a run or hook which started at
// started on codexHome could not record the threads named; the next start
// or sweep that can write the ledger recovers them from their rollouts.
func MarkUnrecorded(home, codexHome, kind string, started time.Time, threads []string) error {
	dir := filepath.Join(home, unrecordedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ns := strconv.FormatInt(started.UnixNano(), 10)
	var first error
	touch := func(name string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			err = f.Close()
		}
		if first == nil {
			first = err
		}
	}
	// Threads first: a crumb seen is a crumb complete.
	for _, id := range threads {
		if validThreadID(id) {
			touch(ns + "." + id)
		}
	}
	touch(ns + "-" + base64.RawURLEncoding.EncodeToString([]byte(codexHome)) + "." + kind)
	return first
}

// validThreadID keeps a thread id a plain file name.
func validThreadID(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/.\\\x00") && len(id) <= 128
}

// Breadcrumb is one run or hook that could not write the ledger.
type Breadcrumb struct {
	path      string
	Started   time.Time
	CodexHome string
	Kind      string   // "run" or "hook"
	Threads   []string // the threads it could not record
	files     []string // the thread files
}

// Unrecorded lists the breadcrumbs of runs and hooks that could not write
// the ledger, oldest first.
func Unrecorded(home string) []Breadcrumb {
	dir := filepath.Join(home, unrecordedDir)
	entries, _ := os.ReadDir(dir)
	threads := map[string][]string{} // start nanos → thread ids
	var out []Breadcrumb
	for _, e := range entries {
		if ns, id, ok := strings.Cut(e.Name(), "."); ok && !strings.Contains(ns, "-") {
			threads[ns] = append(threads[ns], id)
			continue
		}
		ns, rest, ok := strings.Cut(e.Name(), "-")
		enc, kind, _ := strings.Cut(rest, ".")
		n, err := strconv.ParseInt(ns, 10, 64)
		ch, err2 := base64.RawURLEncoding.DecodeString(enc)
		if !ok || err != nil || err2 != nil || (kind != CrumbRun && kind != CrumbHook) {
			continue
		}
		out = append(out, Breadcrumb{path: filepath.Join(dir, e.Name()), Started: time.Unix(0, n), CodexHome: string(ch), Kind: kind})
	}
	for i := range out {
		ns := strconv.FormatInt(out[i].Started.UnixNano(), 10)
		ids := threads[ns]
		sort.Strings(ids)
		out[i].Threads = ids
		for _, id := range ids {
			out[i].files = append(out[i].files, filepath.Join(dir, ns+"."+id))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// recoverUnrecorded records and commits, once each, the sessions that runs
// and hooks of this CX_HOME on codexHome could not record, as their
// breadcrumbs name them. A thread a process still writes waits for a later
// scan: its writer lock is held; or — a hook's thread, whose Codex may
// still run, on a Codex that keeps no writer locks — its rollout was
// written within active_window. A run's breadcrumb is left after its Codex
// exited, so its threads are done unless another Codex resumed them.
func (m *Manager) recoverUnrecorded(ctx context.Context, codexHome string) (int, error) {
	if codexHome == "" {
		return 0, nil
	}
	codexHome, _ = filepath.Abs(codexHome)
	now := m.Now()
	recovered := 0
	for _, b := range Unrecorded(m.Cfg.Home) {
		if b.CodexHome != codexHome {
			continue
		}
		waiting := false
		for _, id := range b.Threads {
			n, wait, err := m.recoverThread(ctx, codexHome, id, b.Kind, now)
			if err != nil {
				return recovered, err
			}
			recovered += n
			waiting = waiting || wait
		}
		if !waiting {
			for _, f := range b.files {
				_ = os.Remove(f)
			}
			_ = os.Remove(b.path)
		}
	}
	if recovered > 0 {
		err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
			return tx.AddEvent(ctx, "rollouts.recovered", "", "", fmt.Sprintf("%d session(s) in %s", recovered, codexHome))
		})
		if err != nil {
			return recovered, err
		}
	}
	return recovered, nil
}

// recoverThread records and ends one thread a breadcrumb names; wait is
// true when it is still being written.
func (m *Manager) recoverThread(ctx context.Context, codexHome, id, kind string, now time.Time) (n int, wait bool, err error) {
	s, err := m.DB.Session(ctx, id)
	recorded := err == nil
	switch {
	case recorded && (s.RunID != "" || s.Status != ledger.Live):
		return 0, false, nil // a run has it (resumed), or it is over
	case recorded:
		// A hook recorded it, knowing no run (this one could not write its
		// own): its end is this breadcrumb's to make.
	case !errors.Is(err, ledger.ErrNotFound):
		return 0, false, err
	}
	path := codex.FindRollout(codexHome, id, "")
	if path == "" {
		return 0, false, nil // a thread with no turn: nothing to keep
	}
	if kind == CrumbRun {
		if codex.ThreadLocked(codexHome, id) {
			return 0, true, nil // resumed by another Codex meanwhile
		}
	} else if m.RolloutLiveness(codexHome, id, path, now).Live {
		return 0, true, nil
	}
	if !recorded {
		err = m.Learn(ctx, ledger.Session{ID: id, TranscriptPath: path, CodexHome: codexHome, EndReason: ReasonRecovered},
			"session.recovered", "recorded late from its rollout: the ledger could not be written when it ran")
		if err != nil {
			return 0, false, err
		}
	}
	if _, err := m.End(ctx, id, ReasonRecovered, EndOptions{}); err != nil {
		return 0, false, err
	}
	return 1, false, nil
}

// OwnThreads finds, once a Codex process has exited, the threads it
// created and wrote: rollouts of threads born (their ids are UUIDv7s)
// since started, that no other process holds a writer lock on and no other
// process logged, started in cwd (when cwd is known). known(id) leaves
// out threads recorded elsewhere (nil: none). Used by a run's exit, which
// learns what discovery missed, and by a run that could not open the
// ledger, to name its threads in its breadcrumb.
func OwnThreads(codexHome string, pid int, started time.Time, cwd string, logs *codex.LogWatch, skip func(id string) bool) map[string]string {
	now := time.Now()
	found := map[string]string{}
	for id, path := range codex.RolloutsSince(codexHome, started) {
		if skip != nil && skip(id) {
			continue
		}
		born, ok := rollout.IDTime(id)
		if !ok || born.Before(started.Add(-clockSlack)) || born.After(now.Add(clockSlack)) {
			continue
		}
		if codex.ThreadLocked(codexHome, id) || (logs != nil && logs.LoggedByOther(id, pid)) {
			continue // another Codex's, and live
		}
		meta, err := rollout.ReadMeta(path)
		if err != nil || meta.ID != id || (cwd != "" && filepath.Clean(meta.Cwd) != filepath.Clean(cwd)) {
			continue
		}
		found[id] = path
	}
	return found
}

// clockSlack is how far a thread id's time may stray from this process's
// clock readings (both are the same clock; milliseconds round).
const clockSlack = time.Second

// RecoverAtStart is what a run does beside Codex's start: it ends the
// sessions of runs whose cx died, records what earlier runs could not,
// and works the commits left in the outbox (for at most 30 s).
func (m *Manager) RecoverAtStart(ctx context.Context, codexHome string) {
	if _, err := m.recoverOrphans(ctx); err != nil {
		m.Log.Printf("orphan recovery at start: %v", err)
	}
	if n, err := m.recoverUnrecorded(ctx, codexHome); err != nil {
		m.Log.Printf("recovering unrecorded sessions at start: %v", err)
	} else if n > 0 {
		m.Log.Printf("recorded %d session(s) an earlier run could not record", n)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := m.WorkOutbox(wctx, nil); err != nil && wctx.Err() == nil {
		m.Log.Printf("outbox at start: %v", err)
	}
}

// RolloutLiveness judges whether Codex may still write a rollout (its
// writer lock, else — Codex before writer locks — its age against
// active_window).
func (m *Manager) RolloutLiveness(home, id, path string, now time.Time) codex.Liveness {
	fi, err := os.Stat(path)
	if err != nil {
		return codex.Liveness{Live: true} // moved meanwhile (archived): a later look
	}
	meta, _ := rollout.ReadMeta(path) // no complete first line yet: judged by age
	return codex.RolloutLiveness(home, id, meta.CLIVersion, fi.ModTime(), now, m.Cfg.Lifecycle.ActiveWindow.Duration)
}
