package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Tables sink_turns, sink_commits and sink_sessions: how far each turn,
// commit and remote session got with a remote sink — OpenViking's
// exactly-once by its counters. Written by the OpenViking sink only.

// Sink progress states.
const (
	SinkSending  = "sending"  // a request is (or was, at a crash) in flight
	SinkSent     = "sent"     // the server accepted it
	SinkAccepted = "accepted" // a commit the server archived
	SinkSkipped  = "skipped"  // a commit the server had nothing for
)

// SinkTurn is how far one turn got with a remote sink.
type SinkTurn struct {
	State    string
	Messages int
	// RemoteBefore is the server's message counter cx expected before it
	// sent the turn (-1: not known); SentAt when it sent.
	RemoteBefore int
	SentAt       time.Time
}

// SinkTurns returns a session's per-turn progress with a sink.
func (db *DB) SinkTurns(ctx context.Context, sessionID, sink string) (map[string]SinkTurn, error) {
	rows, err := db.q().QueryContext(ctx, `SELECT turn_key, state, messages, remote_before, sent_at FROM sink_turns WHERE session_id = ? AND sink = ?`, sessionID, sink)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]SinkTurn{}
	for rows.Next() {
		var k, sent string
		var st SinkTurn
		if err := rows.Scan(&k, &st.State, &st.Messages, &st.RemoteBefore, &sent); err != nil {
			return nil, err
		}
		st.SentAt = parseTS(sent)
		out[k] = st
	}
	return out, rows.Err()
}

// PutSinkTurn records a turn's progress with a sink.
func (tx *Tx) PutSinkTurn(ctx context.Context, sessionID, sink, key string, st SinkTurn) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO sink_turns (session_id, sink, turn_key, state, messages, remote_before, sent_at, updated_at) VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT(session_id, sink, turn_key) DO UPDATE SET state=excluded.state, messages=excluded.messages,
		remote_before=excluded.remote_before, sent_at=excluded.sent_at, updated_at=excluded.updated_at`,
		sessionID, sink, key, st.State, st.Messages, st.RemoteBefore, tsOrEmpty(st.SentAt), ts(tx.now))
	return err
}

// SinkCommit is a generation's commit progress with a sink.
type SinkCommit struct {
	State string
	// What the server's counters were before cx sent the commit (-1: not
	// known): its commit count, its live and its total message counts.
	RemoteBefore int
	LiveBefore   int
	TotalBefore  int
	SentAt       time.Time
	ArchiveURI   string // the archive the server made, when it said
	Detail       string
}

// SinkCommit returns a generation's commit progress ("" state: none yet).
func (db *DB) SinkCommit(ctx context.Context, sessionID, sink string, gen int) (SinkCommit, error) {
	var c SinkCommit
	var sent string
	err := db.q().QueryRowContext(ctx, `SELECT state, remote_before, live_before, total_before, sent_at, archive_uri, detail
		FROM sink_commits WHERE session_id = ? AND sink = ? AND generation = ?`,
		sessionID, sink, gen).Scan(&c.State, &c.RemoteBefore, &c.LiveBefore, &c.TotalBefore, &sent, &c.ArchiveURI, &c.Detail)
	if errors.Is(err, sql.ErrNoRows) {
		return SinkCommit{}, nil
	}
	c.SentAt = parseTS(sent)
	return c, err
}

// LatestArchiveURI is the archive URI of a session's newest commit with a
// sink that named one ("" if none).
func (db *DB) LatestArchiveURI(ctx context.Context, sessionID, sink string) (string, error) {
	var uri string
	err := db.q().QueryRowContext(ctx, `SELECT archive_uri FROM sink_commits WHERE session_id = ? AND sink = ? AND archive_uri != ''
		ORDER BY generation DESC LIMIT 1`, sessionID, sink).Scan(&uri)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return uri, err
}

// PutSinkCommit records a generation's commit progress with a sink.
func (tx *Tx) PutSinkCommit(ctx context.Context, sessionID, sink string, gen int, c SinkCommit) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO sink_commits (session_id, sink, generation, state, remote_before, live_before, total_before, sent_at, archive_uri, detail, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(session_id, sink, generation) DO UPDATE SET state=excluded.state, remote_before=excluded.remote_before,
		live_before=excluded.live_before, total_before=excluded.total_before, sent_at=excluded.sent_at,
		archive_uri=excluded.archive_uri, detail=excluded.detail, updated_at=excluded.updated_at`,
		sessionID, sink, gen, c.State, c.RemoteBefore, c.LiveBefore, c.TotalBefore, tsOrEmpty(c.SentAt), c.ArchiveURI, c.Detail, ts(tx.now))
	return err
}

// Sink counters.
const (
	CounterTotal = "total" // the server's total_message_count: never reset
	CounterLive  = "live"  // its message_count: reset by each commit
)

// SinkSession is what cx expects a remote session's counters to be after
// everything it confirmed.
type SinkSession struct {
	Counter    string // CounterTotal or CounterLive
	Expected   int    // the message counter
	Commits    int    // the commit count cx accounts for
	AutoCommit string // what became of the server's auto-commit ("off", "unsupported")
}

// SinkSession returns a session's counters with a sink (false: none yet).
func (db *DB) SinkSession(ctx context.Context, sessionID, sink string) (SinkSession, bool, error) {
	var s SinkSession
	err := db.q().QueryRowContext(ctx, `SELECT counter, expected, commits, auto_commit FROM sink_sessions WHERE session_id = ? AND sink = ?`,
		sessionID, sink).Scan(&s.Counter, &s.Expected, &s.Commits, &s.AutoCommit)
	if errors.Is(err, sql.ErrNoRows) {
		return SinkSession{}, false, nil
	}
	return s, err == nil, err
}

// PutSinkSession records a session's counters with a sink.
func (tx *Tx) PutSinkSession(ctx context.Context, sessionID, sink string, s SinkSession) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO sink_sessions (session_id, sink, counter, expected, commits, auto_commit, updated_at) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT(session_id, sink) DO UPDATE SET counter=excluded.counter, expected=excluded.expected, commits=excluded.commits,
		auto_commit=excluded.auto_commit, updated_at=excluded.updated_at`,
		sessionID, sink, s.Counter, s.Expected, s.Commits, s.AutoCommit, ts(tx.now))
	return err
}
