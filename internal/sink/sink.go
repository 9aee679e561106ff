// Package sink is what every memory backend implements and what it may use
// of cx: the Sink interface the outbox calls once per generation (and the
// optional Appender, Overviewer and Checker), the request it gets, the
// error that parks a job, and Host — the narrow view of cx a sink works
// with (its ledger steps, the config, the log, the clock, a cross-process
// lock). The sinks themselves are the packages below it: local, openviking,
// exec.
package sink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"cx/internal/config"
	"cx/internal/fsutil"
	"cx/internal/health"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/rollout"
)

// Request is what a sink gets to commit one generation.
type Request struct {
	Session    ledger.Session
	Generation ledger.Generation
	Turns      []rollout.Turn
	Job        ledger.Job
	// Checkpoint is the generation's checkpoint at its end (JSON), kept by
	// the ledger; "" for a generation ended before cx kept it.
	Checkpoint string
}

// Sink is a memory backend. Commit must be safe to call again after a crash
// (the outbox guarantees at-least-once; a sink makes it exactly-once by
// keying its effect on the session and generation).
type Sink interface {
	Commit(ctx context.Context, req Request) error
}

// Appender is a sink that takes turns before the session ends (on Stop):
// those of generations up to upTo not yet sent.
type Appender interface {
	Append(ctx context.Context, s ledger.Session, upTo int) error
}

// Overviewer is a sink that holds an overview of a session's archives,
// which a resumed session is given (bounded by maxChars; "" for none).
type Overviewer interface {
	ResumeOverview(ctx context.Context, codexID string, maxChars int) string
}

// Checker is a sink that can tell `cx ctl doctor` whether it works.
type Checker interface {
	Check(ctx context.Context) health.Check
}

// PermanentError marks a failure retrying cannot fix: the job is parked at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Upkeeper is a sink with upkeep to do after a sweep or an import has
// worked its jobs (the local sink: the search index it writes, kept
// merged, and per-prompt recall's windows kept current).
type Upkeeper interface {
	Upkeep(ctx context.Context) error
}

// ReasonImport ends the one generation of a session `cx ctl import`
// recorded from Codex's history: it is archived and indexed, but old work
// does not rewrite the project's continuity.
const ReasonImport = "import"

// Host is what a sink may use of cx.
type Host struct {
	Store ledger.SinkStore // what the sink may read and write of the ledger
	// Index is the ledger for the one sink that keeps the search index it
	// writes with its archives (the local sink's upkeep: Upkeeper); nil
	// for the others.
	Index  *ledger.DB
	Cfg    config.Config
	Log    *logs.Logger
	Getenv func(string) (string, bool)
	Now    func() time.Time
}

// LockRemote serialises, across processes, everything sent to one remote
// sink for one session: two workers (a Stop's append, the end's commit)
// must never both decide a turn still needs sending.
func (h Host) LockRemote(ctx context.Context, sessionID, sink string) (func(), error) {
	dir := filepath.Join(h.Cfg.Home, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(sink + "\x00" + sessionID))
	unlock, err := fsutil.LockContext(ctx, filepath.Join(dir, hex.EncodeToString(sum[:8])+".lock"))
	if err != nil {
		return nil, fmt.Errorf("wait for the %s lock of %s: %w", sink, sessionID, err)
	}
	return unlock, nil
}

// Turn decodes a stored turn (the ledger keeps each as its JSON); ok is
// false for one that does not decode.
func Turn(st ledger.StoredTurn) (t rollout.Turn, ok bool) {
	return t, json.Unmarshal([]byte(st.Data), &t) == nil
}

// Turns decodes stored turns, leaving out any that does not decode.
func Turns(stored []ledger.StoredTurn) []rollout.Turn {
	out := make([]rollout.Turn, 0, len(stored))
	for _, st := range stored {
		if t, ok := Turn(st); ok {
			out = append(out, t)
		}
	}
	return out
}

// ParentOf is the Codex session that spawned s, for a subagent's thread
// (its rollout names it; the ledger keeps that as the session's meta), ""
// otherwise. A child is committed as a session of its own, attributed to
// its parent.
func ParentOf(s ledger.Session) string {
	if s.Meta == "" {
		return ""
	}
	var m rollout.SessionMeta
	if json.Unmarshal([]byte(s.Meta), &m) != nil {
		return ""
	}
	return m.ParentID
}
