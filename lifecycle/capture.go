package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"cx/internal/checkpoint"
	"cx/internal/codex"
	"cx/internal/ledger"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/testpoint"
)

// afterCapture is more work done in the transaction that stores a capture,
// on the session as stored: one transaction where two would let another
// process in between.
type afterCapture func(ctx context.Context, tx *ledger.Tx, s *ledger.Session) error

// capture captures the session's new turns from its rollout (new turns
// after an ended generation open the next one) and returns the session as
// stored afterwards. It reads nothing when more than limit bytes (limit >
// 0) are unread, reporting it deferred, and runs then (when not nil and
// not deferred) in the transaction that stores what it read.
func (m *Manager) capture(ctx context.Context, id string, limit int64, then afterCapture) (ledger.Session, bool, error) {
	r, err := m.readCapture(ctx, id, limit)
	if err != nil || r.deferred || (r.path == "" && then == nil) {
		return r.session, r.deferred, err
	}
	var s ledger.Session
	err = m.db.Tx(ctx, func(tx *ledger.Tx) error {
		var err error
		if s, err = tx.Session(ctx, id); err != nil {
			return err
		}
		return m.storeCapture(ctx, tx, &s, r, then)
	})
	return s, false, err
}

// captureRead is what a capture's first half (readCapture) found, outside
// any transaction: the session as stored, its rollout found and read from
// the session's cursor (nothing when there is no rollout yet, or more than
// limit is unread).
type captureRead struct {
	session  ledger.Session
	path     string // "": no rollout yet
	cur      rollout.Cursor
	capt     rollout.Capture
	deferred bool
}

// readCapture reads session id's rollout from its cursor, outside any
// transaction (a hook's write lock is held for the write alone).
func (m *Manager) readCapture(ctx context.Context, id string, limit int64) (captureRead, error) {
	r := captureRead{}
	var err error
	if r.session, err = m.db.Session(ctx, id); err != nil {
		return r, err
	}
	s := r.session
	if r.path = codex.FindRollout(s.CodexHome, s.ID, s.TranscriptPath); r.path == "" {
		return r, nil
	}
	if limit > 0 && unread(r.path, s) > limit {
		r.deferred = true
		return r, nil
	}
	var meta *rollout.SessionMeta
	if s.Meta != "" {
		meta = &rollout.SessionMeta{}
		_ = json.Unmarshal([]byte(s.Meta), meta)
	}
	r.cur = rollout.Cursor{Offset: s.Cursor.Offset, Seen: s.Cursor.Seen, Inode: s.Cursor.Inode, Size: s.Cursor.Size, Head: s.Cursor.Head}
	r.capt, err = rollout.CaptureFile(r.path, r.cur, meta, rollout.Options{MaxLineBytes: m.cfg.Capture.MaxLineBytes, MaxToolChars: m.cfg.ToolChars(s.Sinks)})
	if err != nil {
		return r, fmt.Errorf("capture %s: %w", id, err)
	}
	testpoint.Crash("capture")
	return r, nil
}

// readFor reports whether the read was made with what the session s (as
// it is now in a transaction) would have it made with: the same rollout
// and options.
func (r captureRead) readFor(s ledger.Session) bool {
	return s.CodexHome == r.session.CodexHome && s.TranscriptPath == r.session.TranscriptPath && slices.Equal(s.Sinks, r.session.Sinks)
}

// storeCapture is a capture's second half, in tx, on the session s as it
// stands there: what r read stored (unless another process captured from
// there meanwhile: its read stands) and then run.
func (m *Manager) storeCapture(ctx context.Context, tx *ledger.Tx, s *ledger.Session, r captureRead, then afterCapture) error {
	if r.path != "" && (r.capt.Rewritten || (s.Cursor.Offset == r.cur.Offset && s.Cursor.Seen == r.cur.Seen)) {
		if err := m.store(ctx, tx, s, r.path, r.cur, r.capt); err != nil {
			return err
		}
	}
	if then != nil {
		return then(ctx, tx, s)
	}
	return nil
}

// store records (in tx) what a capture from cur read of the rollout at
// path.
func (m *Manager) store(ctx context.Context, tx *ledger.Tx, s *ledger.Session, path string, cur rollout.Cursor, capt rollout.Capture) error {
	if s.TranscriptPath != path {
		s.TranscriptPath = path // first seen, or moved to archived_sessions/
	}
	if s.Meta == "" && capt.Meta != nil {
		b, _ := json.Marshal(capt.Meta)
		s.Meta = string(b)
		if s.Cwd == "" {
			s.Cwd = capt.Meta.Cwd
		}
	}
	for _, t := range capt.Turns {
		if t.Key == "" {
			continue
		}
		data, _ := json.Marshal(t.Map(redact.String)) // no secret at rest
		gen := s.Generation
		if s.Status != ledger.Live {
			// A turn after the generation ended: it opens the next one.
			// (Upsert keeps a known turn in the generation it had.)
			gen = s.Generation + 1
		}
		inserted, err := tx.UpsertTurn(ctx, ledger.StoredTurn{SessionID: s.ID, Key: t.Key, Generation: gen, Offset: t.Offset, Data: string(data)})
		if err != nil {
			return err
		}
		if inserted && s.Status != ledger.Live {
			m.openNext(s, tx, t.Offset)
			_ = tx.AddEvent(ctx, "generation.opened", s.ID, s.RunID, strconv.Itoa(s.Generation))
		}
	}
	n, err := tx.CountTurns(ctx, s.ID, s.Generation)
	if err != nil {
		return err
	}
	s.Turns = n
	s.Cursor = ledger.Cursor{Offset: capt.Cursor.Offset, Seen: capt.Cursor.Seen, Inode: capt.Cursor.Inode, Size: capt.Cursor.Size, Head: capt.Cursor.Head}
	s.Compactions += capt.Compactions
	s.Interrupted += capt.Aborted
	s.Placeholders += len(capt.Placeholders)
	if len(capt.Turns) > 0 || capt.Bytes > 0 {
		s.LastSeen = tx.Now()
	}
	for _, p := range capt.Placeholders {
		_ = tx.AddEvent(ctx, "capture.placeholder", s.ID, s.RunID, fmt.Sprintf("%s at %d (%d bytes)", p.Kind, p.Offset, p.Size))
	}
	if capt.Rewritten {
		_ = tx.AddEvent(ctx, "capture.rewritten", s.ID, s.RunID, path)
	}
	if err := foldCapture(ctx, tx, s.ID, cur.Offset, capt); err != nil {
		return err
	}
	return tx.PutSession(ctx, *s)
}

// foldCapture folds a read's final turns into the session's checkpoint
// fold (those before the read's resume point; the rest are read again) and
// keeps the cx sections it saw. A read from the start (a new or rewritten
// rollout) starts the fold; a read that does not continue the fold — a
// session captured before cx kept folds — leaves it absent, and its
// checkpoint comes from the rollout.
func foldCapture(ctx context.Context, tx *ledger.Tx, id string, from int64, capt rollout.Capture) error {
	kept, ok, err := tx.Fold(ctx, id)
	if err != nil {
		return err
	}
	if ok && !capt.Rewritten && kept.UpTo == from && capt.Cursor.Offset == from && capt.Aborted == 0 && capt.Compactions == 0 &&
		len(capt.Placeholders) == 0 && capt.Goal == nil && !slices.ContainsFunc(capt.Sections, func(h string) bool { return !slices.Contains(kept.Sections, h) }) {
		// The resume point did not move (no turn became final: a prompt's
		// open turn) and nothing was counted or seen anew: the fold stands.
		return nil
	}
	var f *checkpoint.Fold
	switch {
	case capt.Rewritten || (!ok && from == 0):
		f, kept.Sections = checkpoint.NewFold(), nil
	case ok && kept.UpTo == from:
		if f, err = checkpoint.LoadFold([]byte(kept.State)); err != nil {
			return err
		}
	default:
		return nil
	}
	f.Meta(capt.Meta)
	f.Count(capt.Aborted, capt.Compactions, len(capt.Placeholders))
	f.AddRead(capt.Turns, capt.Goal, checkpoint.DefaultCaps, func(t rollout.Turn) bool { return t.Offset < capt.Cursor.Offset })
	sections := kept.Sections
	for _, h := range capt.Sections {
		if !slices.Contains(sections, h) {
			sections = append(sections, h)
		}
	}
	return tx.PutFold(ctx, id, ledger.Fold{UpTo: capt.Cursor.Offset, State: string(f.JSON()), Sections: sections})
}

// checkpointOf is the session's checkpoint as of its last capture — what
// FromRollout gives for the bytes captured — from the ledger alone: the fold
// and the turns still open. ok is false when the ledger has no fold for it.
// present are the cx context sections the rollout already holds.
func checkpointOf(ctx context.Context, q checkpointReader, id string) (cp checkpoint.Checkpoint, present map[string]bool, ok bool, err error) {
	kept, ok, err := q.Fold(ctx, id)
	if err != nil || !ok {
		return cp, nil, false, err
	}
	f, err := checkpoint.LoadFold([]byte(kept.State))
	if err != nil {
		return cp, nil, false, err
	}
	stored, err := q.TurnsFrom(ctx, id, kept.UpTo)
	if err != nil {
		return cp, nil, false, err
	}
	open := sink.Turns(stored)
	present = map[string]bool{}
	for _, h := range kept.Sections {
		present[h] = true
	}
	return f.Checkpoint(checkpoint.DefaultCaps, open...), present, true, nil
}

// checkpointReader is the ledger read checkpointOf needs (in a transaction
// or not).
type checkpointReader interface {
	Fold(ctx context.Context, id string) (ledger.Fold, bool, error)
	TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]ledger.StoredTurn, error)
}
