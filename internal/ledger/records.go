package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Session statuses.
const (
	Live      = "live"
	Ended     = "ended"
	Committed = "committed"
	Empty     = "empty"
)

// Job states.
const (
	JobPending = "pending"
	JobLeased  = "leased"
	JobDone    = "done"
	JobParked  = "parked"
)

// Run is one cx process.
type Run struct {
	ID           string
	PID          int
	PIDStart     uint64
	CodexPID     int
	CodexStart   uint64
	CodexHome    string
	CodexVersion string
	Cwd          string
	Mode         string
	Args         []string
	Sinks        []string
	Foreground   string
	StartedAt    time.Time
	EndedAt      *time.Time
	ExitCode     *int
	EndReason    string
}

// Cursor is how far a session's rollout has been captured, with enough of
// the file's identity to notice a rewrite or shrink.
type Cursor struct {
	Offset int64
	Seen   int64
	Inode  uint64
	Size   int64
	Head   string // hash of the file's first bytes
}

// Session is one Codex session (thread) and its current generation.
type Session struct {
	ID             string
	RunID          string
	Status         string
	Generation     int
	EndReason      string
	TranscriptPath string
	Cwd            string
	CodexHome      string
	Meta           string // the rollout's session_meta (JSON), once read
	Sinks          []string
	Cursor         Cursor
	GenStart       int64 // rollout offset where the current generation began
	Turns          int   // turns captured in the current generation
	Interrupted    int
	Compactions    int
	// InjectedCompactions is how many compactions the checkpoint was
	// re-injected after (once each).
	InjectedCompactions int
	Placeholders        int
	CreatedAt           time.Time
	LastSeen            time.Time
	EndedAt             *time.Time
}

// Generation is one ended generation of a session.
type Generation struct {
	SessionID   string
	Generation  int
	Status      string
	EndReason   string
	RunID       string
	Sinks       []string
	StartOffset int64
	EndOffset   int64
	Turns       int
	ExitStatus  *int
	EndedAt     time.Time
	CommittedAt *time.Time
}

// Job is one unit of outbox work.
type Job struct {
	ID            int64
	Kind          string
	SessionID     string
	Generation    int
	Sink          string
	Detail        string // what a job that goes to no sink is about (an end job's reason)
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LeaseOwner    string
	LeaseUntil    *time.Time
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Tx is a write transaction.
type Tx struct {
	tx  *sql.Tx
	now time.Time
}

// Now is the transaction's timestamp.
func (tx *Tx) Now() time.Time { return tx.now }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func parseTSPtr(s sql.NullString) *time.Time {
	if !s.Valid || s.String == "" {
		return nil
	}
	t := parseTS(s.String)
	return &t
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func parseList(s string) []string {
	var v []string
	_ = json.Unmarshal([]byte(s), &v)
	if v == nil {
		v = []string{}
	}
	return v
}

// ErrNotFound is returned for a missing row.
var ErrNotFound = errors.New("not found")

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

type scanner interface{ Scan(dest ...any) error }

const runCols = `id, pid, pid_start, codex_pid, codex_start, codex_home, codex_version, cwd, mode, args, sinks, foreground, started_at, ended_at, exit_code, end_reason`

func scanRun(s scanner) (Run, error) {
	var r Run
	var args, sinks, started string
	var ended sql.NullString
	var exit sql.NullInt64
	err := s.Scan(&r.ID, &r.PID, &r.PIDStart, &r.CodexPID, &r.CodexStart, &r.CodexHome, &r.CodexVersion, &r.Cwd, &r.Mode,
		&args, &sinks, &r.Foreground, &started, &ended, &exit, &r.EndReason)
	if err != nil {
		return r, err
	}
	r.Args, r.Sinks, r.StartedAt, r.EndedAt = parseList(args), parseList(sinks), parseTS(started), parseTSPtr(ended)
	if exit.Valid {
		n := int(exit.Int64)
		r.ExitCode = &n
	}
	return r, nil
}

const sessionCols = `id, run_id, status, generation, end_reason, transcript_path, cwd, codex_home, meta, sinks, cursor_offset, cursor_seen, cursor_inode, cursor_size, cursor_head, gen_start, turns, interrupted, compactions, injected_compactions, placeholders, created_at, last_seen, ended_at`

func scanSession(s scanner) (Session, error) {
	var x Session
	var sinks, created, seen string
	var ended sql.NullString
	err := s.Scan(&x.ID, &x.RunID, &x.Status, &x.Generation, &x.EndReason, &x.TranscriptPath, &x.Cwd, &x.CodexHome, &x.Meta, &sinks,
		&x.Cursor.Offset, &x.Cursor.Seen, &x.Cursor.Inode, &x.Cursor.Size, &x.Cursor.Head, &x.GenStart, &x.Turns, &x.Interrupted,
		&x.Compactions, &x.InjectedCompactions, &x.Placeholders, &created, &seen, &ended)
	if err != nil {
		return x, err
	}
	x.Sinks, x.CreatedAt, x.LastSeen, x.EndedAt = parseList(sinks), parseTS(created), parseTS(seen), parseTSPtr(ended)
	return x, nil
}

const jobCols = `id, kind, session_id, generation, sink, detail, state, attempts, next_attempt_at, lease_owner, lease_until, last_error, created_at, updated_at`

func scanJob(s scanner) (Job, error) {
	var j Job
	var next, created, updated string
	var lease sql.NullString
	err := s.Scan(&j.ID, &j.Kind, &j.SessionID, &j.Generation, &j.Sink, &j.Detail, &j.State, &j.Attempts, &next, &j.LeaseOwner,
		&lease, &j.LastError, &created, &updated)
	if err != nil {
		return j, err
	}
	j.NextAttemptAt, j.LeaseUntil, j.CreatedAt, j.UpdatedAt = parseTS(next), parseTSPtr(lease), parseTS(created), parseTS(updated)
	return j, nil
}

const genCols = `session_id, generation, status, end_reason, run_id, sinks, start_offset, end_offset, turns, exit_status, ended_at, committed_at`

func scanGeneration(s scanner) (Generation, error) {
	var g Generation
	var sinks, ended string
	var exit sql.NullInt64
	var committed sql.NullString
	err := s.Scan(&g.SessionID, &g.Generation, &g.Status, &g.EndReason, &g.RunID, &sinks, &g.StartOffset, &g.EndOffset,
		&g.Turns, &exit, &ended, &committed)
	if err != nil {
		return g, err
	}
	g.Sinks, g.EndedAt, g.CommittedAt = parseList(sinks), parseTS(ended), parseTSPtr(committed)
	if exit.Valid {
		n := int(exit.Int64)
		g.ExitStatus = &n
	}
	return g, nil
}

// list runs a query and scans every row.
func list[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func getRun(ctx context.Context, q querier, id string) (Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return r, err
}

func getSession(ctx context.Context, q querier, id string) (Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return s, err
}

func listSessions(ctx context.Context, q querier, where string, args ...any) ([]Session, error) {
	return list(ctx, q, scanSession, `SELECT `+sessionCols+` FROM sessions `+where, args...)
}

func listRuns(ctx context.Context, q querier, where string, args ...any) ([]Run, error) {
	return list(ctx, q, scanRun, `SELECT `+runCols+` FROM runs `+where, args...)
}

func listJobs(ctx context.Context, q querier, where string, args ...any) ([]Job, error) {
	return list(ctx, q, scanJob, `SELECT `+jobCols+` FROM jobs `+where, args...)
}

func listGenerations(ctx context.Context, q querier, where string, args ...any) ([]Generation, error) {
	return list(ctx, q, scanGeneration, `SELECT `+genCols+` FROM generations `+where, args...)
}

// --- reads outside a transaction ---

// Run returns one run.
func (db *DB) Run(ctx context.Context, id string) (Run, error) { return getRun(ctx, db.db, id) }

// Session returns one session.
func (db *DB) Session(ctx context.Context, id string) (Session, error) {
	return getSession(ctx, db.db, id)
}

// Sessions returns every session, newest activity first.
func (db *DB) Sessions(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, db.db, `ORDER BY last_seen DESC, id`)
}

// Runs returns runs, newest first; open only when openOnly.
func (db *DB) Runs(ctx context.Context, openOnly bool) ([]Run, error) {
	if openOnly {
		return listRuns(ctx, db.db, `WHERE ended_at IS NULL ORDER BY started_at DESC`)
	}
	return listRuns(ctx, db.db, `ORDER BY started_at DESC`)
}

// Jobs returns jobs in the given states (all when none), oldest first.
func (db *DB) Jobs(ctx context.Context, states ...string) ([]Job, error) {
	if len(states) == 0 {
		return listJobs(ctx, db.db, `ORDER BY id`)
	}
	b, _ := json.Marshal(states)
	return listJobs(ctx, db.db, `WHERE state IN (SELECT value FROM json_each(?)) ORDER BY id`, string(b))
}

// SessionJobs returns one session's jobs, oldest first.
func (db *DB) SessionJobs(ctx context.Context, sessionID string) ([]Job, error) {
	return listJobs(ctx, db.db, `WHERE session_id = ? ORDER BY id`, sessionID)
}

// SweepCandidates returns the sessions a sweep looks at: every live one,
// and the others seen since since; most recent first.
func (db *DB) SweepCandidates(ctx context.Context, since time.Time) ([]Session, error) {
	return listSessions(ctx, db.db, `WHERE status = ? OR last_seen >= ? ORDER BY last_seen DESC, id`, Live, ts(since))
}

// RecentSessions returns the n most recently seen sessions, most recent
// first.
func (db *DB) RecentSessions(ctx context.Context, n int) ([]Session, error) {
	return listSessions(ctx, db.db, `ORDER BY last_seen DESC, id LIMIT ?`, n)
}

// LiveSessions returns the sessions whose generation is live, most recently
// seen first.
func (db *DB) LiveSessions(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, db.db, `WHERE status = ? ORDER BY last_seen DESC, id`, Live)
}

// SessionCounts counts sessions by status.
func (db *DB) SessionCounts(ctx context.Context) (map[string]int, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT status, count(*) FROM sessions GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	return out, rows.Err()
}

// Generations returns a session's ended generations, in order.
func (db *DB) Generations(ctx context.Context, sessionID string) ([]Generation, error) {
	return listGenerations(ctx, db.db, `WHERE session_id = ? ORDER BY generation`, sessionID)
}

// Commits counts a session's generations committed to every sink.
func (db *DB) Commits(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM generations WHERE session_id = ? AND status = ?`, sessionID, Committed).Scan(&n)
	return n, err
}

// DueJobs reports whether any job is due now (cheap: lets a hook decide
// whether to start outbox work at all).
func (db *DB) DueJobs(ctx context.Context, now time.Time) (bool, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs WHERE (state = ? AND next_attempt_at <= ?) OR (state = ? AND lease_until <= ?) LIMIT 1)`,
		JobPending, ts(now), JobLeased, ts(now)).Scan(&n)
	return n > 0, err
}

// Events returns the audit log for a session (all when sessionID is "").
func (db *DB) Events(ctx context.Context, sessionID string) ([]Event, error) {
	q := `SELECT id, at, kind, session_id, run_id, detail FROM events `
	var args []any
	if sessionID != "" {
		q += `WHERE session_id = ? `
		args = append(args, sessionID)
	}
	return list(ctx, db.db, func(s scanner) (Event, error) {
		var e Event
		var at string
		err := s.Scan(&e.ID, &at, &e.Kind, &e.SessionID, &e.RunID, &e.Detail)
		e.At = parseTS(at)
		return e, err
	}, q+`ORDER BY id`, args...)
}

// LastEvent is the newest event of a kind (ErrNotFound when there is none).
func (db *DB) LastEvent(ctx context.Context, kind string) (Event, error) {
	evs, err := list(ctx, db.db, func(s scanner) (Event, error) {
		var e Event
		var at string
		err := s.Scan(&e.ID, &at, &e.Kind, &e.SessionID, &e.RunID, &e.Detail)
		e.At = parseTS(at)
		return e, err
	}, `SELECT id, at, kind, session_id, run_id, detail FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1`, kind)
	if err != nil {
		return Event{}, err
	}
	if len(evs) == 0 {
		return Event{}, ErrNotFound
	}
	return evs[0], nil
}

// Event is one audit-log entry.
type Event struct {
	ID        int64
	At        time.Time
	Kind      string
	SessionID string
	RunID     string
	Detail    string
}

// --- writes inside a transaction ---

// Run returns one run.
func (tx *Tx) Run(ctx context.Context, id string) (Run, error) { return getRun(ctx, tx.tx, id) }

// Session returns one session.
func (tx *Tx) Session(ctx context.Context, id string) (Session, error) {
	return getSession(ctx, tx.tx, id)
}

// RunSessions returns the sessions a run owns.
func (tx *Tx) RunSessions(ctx context.Context, runID string) ([]Session, error) {
	return listSessions(ctx, tx.tx, `WHERE run_id = ? ORDER BY created_at, id`, runID)
}

// UnownedLive returns live sessions no run owns.
func (tx *Tx) UnownedLive(ctx context.Context) ([]Session, error) {
	return listSessions(ctx, tx.tx, `WHERE run_id = '' AND status = ? ORDER BY last_seen DESC`, Live)
}

// PutRun inserts or replaces a run.
func (tx *Tx) PutRun(ctx context.Context, r Run) error {
	var exit any
	if r.ExitCode != nil {
		exit = *r.ExitCode
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO runs (`+runCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET pid=excluded.pid, pid_start=excluded.pid_start, codex_pid=excluded.codex_pid,
		codex_start=excluded.codex_start, codex_home=excluded.codex_home, codex_version=excluded.codex_version,
		cwd=excluded.cwd, mode=excluded.mode, args=excluded.args, sinks=excluded.sinks, foreground=excluded.foreground,
		started_at=excluded.started_at, ended_at=excluded.ended_at, exit_code=excluded.exit_code, end_reason=excluded.end_reason`,
		r.ID, r.PID, r.PIDStart, r.CodexPID, r.CodexStart, r.CodexHome, r.CodexVersion, r.Cwd, r.Mode, jsonList(r.Args),
		jsonList(r.Sinks), r.Foreground, ts(r.StartedAt), tsPtr(r.EndedAt), exit, r.EndReason)
	if err != nil {
		return fmt.Errorf("put run %s: %w", r.ID, err)
	}
	return nil
}

// PutSession inserts or replaces a session.
func (tx *Tx) PutSession(ctx context.Context, s Session) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO sessions (`+sessionCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET run_id=excluded.run_id, status=excluded.status, generation=excluded.generation,
		end_reason=excluded.end_reason, transcript_path=excluded.transcript_path, cwd=excluded.cwd, codex_home=excluded.codex_home,
		meta=excluded.meta, sinks=excluded.sinks, cursor_offset=excluded.cursor_offset, cursor_seen=excluded.cursor_seen, cursor_inode=excluded.cursor_inode, cursor_size=excluded.cursor_size,
		cursor_head=excluded.cursor_head, gen_start=excluded.gen_start, turns=excluded.turns, interrupted=excluded.interrupted,
		compactions=excluded.compactions, injected_compactions=excluded.injected_compactions, placeholders=excluded.placeholders, last_seen=excluded.last_seen, ended_at=excluded.ended_at`,
		s.ID, s.RunID, s.Status, s.Generation, s.EndReason, s.TranscriptPath, s.Cwd, s.CodexHome, s.Meta, jsonList(s.Sinks), s.Cursor.Offset,
		s.Cursor.Seen, s.Cursor.Inode, s.Cursor.Size, s.Cursor.Head, s.GenStart, s.Turns, s.Interrupted, s.Compactions, s.InjectedCompactions, s.Placeholders,
		ts(s.CreatedAt), ts(s.LastSeen), tsPtr(s.EndedAt))
	if err != nil {
		return fmt.Errorf("put session %s: %w", s.ID, err)
	}
	return nil
}

// InsertGeneration records an ended generation.
func (tx *Tx) InsertGeneration(ctx context.Context, g Generation) error {
	var exit any
	if g.ExitStatus != nil {
		exit = *g.ExitStatus
	}
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO generations (`+genCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		g.SessionID, g.Generation, g.Status, g.EndReason, g.RunID, jsonList(g.Sinks), g.StartOffset, g.EndOffset, g.Turns,
		exit, ts(g.EndedAt), tsPtr(g.CommittedAt))
	if err != nil {
		return fmt.Errorf("record generation %s/%d: %w", g.SessionID, g.Generation, err)
	}
	return nil
}

// Generation returns one ended generation.
func (tx *Tx) Generation(ctx context.Context, sessionID string, gen int) (Generation, error) {
	gs, err := listGenerations(ctx, tx.tx, `WHERE session_id = ? AND generation = ?`, sessionID, gen)
	if err != nil {
		return Generation{}, err
	}
	if len(gs) == 0 {
		return Generation{}, fmt.Errorf("generation %s/%d: %w", sessionID, gen, ErrNotFound)
	}
	return gs[0], nil
}

// SetGenerationStatus updates an ended generation's status.
func (tx *Tx) SetGenerationStatus(ctx context.Context, sessionID string, gen int, status string) error {
	var committed any
	if status == Committed {
		committed = ts(tx.now)
	}
	_, err := tx.tx.ExecContext(ctx, `UPDATE generations SET status = ?, committed_at = ? WHERE session_id = ? AND generation = ?`,
		status, committed, sessionID, gen)
	return err
}

// Enqueue adds a job unless one with the same key exists; it reports
// whether it added one.
func (tx *Tx) Enqueue(ctx context.Context, kind, sessionID string, gen int, sink string) (bool, error) {
	return tx.EnqueueDetail(ctx, kind, sessionID, gen, sink, "")
}

// EnqueueDetail is Enqueue with what the job is about, for a job that goes
// to no sink (an end job's reason).
func (tx *Tx) EnqueueDetail(ctx context.Context, kind, sessionID string, gen int, sink, detail string) (bool, error) {
	res, err := tx.tx.ExecContext(ctx, `INSERT INTO jobs (kind, session_id, generation, sink, detail, state, next_attempt_at, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(kind, session_id, generation, sink) DO NOTHING`,
		kind, sessionID, gen, sink, detail, JobPending, ts(tx.now), ts(tx.now), ts(tx.now))
	if err != nil {
		return false, fmt.Errorf("enqueue %s %s/%d %s: %w", kind, sessionID, gen, sink, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// LeaseJob takes the oldest due job (pending and due, or leased with an
// expired lease) for owner until the lease ends.
func (tx *Tx) LeaseJob(ctx context.Context, owner string, lease time.Duration, only []int64) (Job, bool, error) {
	q := `WHERE ((state = ? AND next_attempt_at <= ?) OR (state = ? AND lease_until <= ?))`
	args := []any{JobPending, ts(tx.now), JobLeased, ts(tx.now)}
	if only != nil {
		b, _ := json.Marshal(only)
		q += ` AND id IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	jobs, err := listJobs(ctx, tx.tx, q+` ORDER BY id LIMIT 1`, args...)
	if err != nil || len(jobs) == 0 {
		return Job{}, false, err
	}
	j := jobs[0]
	until := tx.now.Add(lease)
	j.State, j.LeaseOwner, j.LeaseUntil = JobLeased, owner, &until
	_, err = tx.tx.ExecContext(ctx, `UPDATE jobs SET state = ?, lease_owner = ?, lease_until = ?, updated_at = ? WHERE id = ?`,
		JobLeased, owner, ts(until), ts(tx.now), j.ID)
	return j, err == nil, err
}

// Job returns one job.
func (tx *Tx) Job(ctx context.Context, id int64) (Job, error) {
	jobs, err := listJobs(ctx, tx.tx, `WHERE id = ?`, id)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) == 0 {
		return Job{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return jobs[0], nil
}

// UpdateJob writes a job's state fields.
func (tx *Tx) UpdateJob(ctx context.Context, j Job) error {
	_, err := tx.tx.ExecContext(ctx, `UPDATE jobs SET state = ?, attempts = ?, next_attempt_at = ?, lease_owner = ?, lease_until = ?,
		last_error = ?, updated_at = ? WHERE id = ?`,
		j.State, j.Attempts, ts(j.NextAttemptAt), j.LeaseOwner, tsPtr(j.LeaseUntil), j.LastError, ts(tx.now), j.ID)
	return err
}

// GenerationJobs returns every job of one generation.
func (tx *Tx) GenerationJobs(ctx context.Context, sessionID string, gen int) ([]Job, error) {
	return listJobs(ctx, tx.tx, `WHERE session_id = ? AND generation = ? ORDER BY id`, sessionID, gen)
}

// ParkedJobs returns parked jobs (ids nil: all).
func (tx *Tx) ParkedJobs(ctx context.Context) ([]Job, error) {
	return listJobs(ctx, tx.tx, `WHERE state = ? ORDER BY id`, JobParked)
}

// AddEvent appends to the audit log.
func (tx *Tx) AddEvent(ctx context.Context, kind, sessionID, runID, detail string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO events (at, kind, session_id, run_id, detail) VALUES (?,?,?,?,?)`,
		ts(tx.now), kind, sessionID, runID, detail)
	return err
}

// PutArchive stores (or keeps, if already stored) a generation's archive:
// storing twice is a no-op, so a retried local commit never doubles.
func (tx *Tx) PutArchive(ctx context.Context, sessionID string, gen int, turns, checkpoint, continuity string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO archives (session_id, generation, turns, checkpoint, continuity, stored_at)
		VALUES (?,?,?,?,?,?) ON CONFLICT(session_id, generation) DO NOTHING`, sessionID, gen, turns, checkpoint, continuity, ts(tx.now))
	return err
}

// Archive is a stored generation archive.
type Archive struct {
	SessionID  string
	Generation int
	Turns      string
	Checkpoint string
	Continuity string
	StoredAt   time.Time
}

// Archives returns a session's stored archives.
func (db *DB) Archives(ctx context.Context, sessionID string) ([]Archive, error) {
	return list(ctx, db.db, scanArchive, `SELECT `+archiveCols+` FROM archives WHERE session_id = ? ORDER BY generation`, sessionID)
}

const archiveCols = `session_id, generation, turns, checkpoint, continuity, stored_at`

func scanArchive(s scanner) (Archive, error) {
	var a Archive
	var at string
	err := s.Scan(&a.SessionID, &a.Generation, &a.Turns, &a.Checkpoint, &a.Continuity, &at)
	a.StoredAt = parseTS(at)
	return a, err
}

// StoredTurn is a captured turn as the ledger keeps it.
type StoredTurn struct {
	SessionID  string
	Key        string
	Generation int
	Offset     int64
	Data       string // JSON of the turn
}

// UpsertTurn stores a turn by key. A turn seen before keeps its generation
// and gets the newer data (a turn captured while still open is completed
// later); inserted reports whether it is new.
func (tx *Tx) UpsertTurn(ctx context.Context, t StoredTurn) (inserted bool, err error) {
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ? AND key = ?`, t.SessionID, t.Key).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		_, err = tx.tx.ExecContext(ctx, `UPDATE turns SET data = ? WHERE session_id = ? AND key = ?`, t.Data, t.SessionID, t.Key)
		return false, err
	}
	_, err = tx.tx.ExecContext(ctx, `INSERT INTO turns (session_id, key, generation, offset, data, captured_at) VALUES (?,?,?,?,?,?)`,
		t.SessionID, t.Key, t.Generation, t.Offset, t.Data, ts(tx.now))
	return err == nil, err
}

// CountTurns counts a generation's captured turns.
func (tx *Tx) CountTurns(ctx context.Context, sessionID string, gen int) (int, error) {
	var n int
	err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ? AND generation = ?`, sessionID, gen).Scan(&n)
	return n, err
}

// Turns returns a generation's captured turns in rollout order.
func (db *DB) Turns(ctx context.Context, sessionID string, gen int) ([]StoredTurn, error) {
	return list(ctx, db.db, scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND generation = ? ORDER BY offset, key`, sessionID, gen)
}

// TotalTurns counts every captured turn of a session.
func (db *DB) TotalTurns(ctx context.Context, sessionID string) (int, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT count(*) FROM turns WHERE session_id = ?`, sessionID).Scan(&n)
	return n, err
}

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
	rows, err := db.db.QueryContext(ctx, `SELECT turn_key, state, messages, remote_before, sent_at FROM sink_turns WHERE session_id = ? AND sink = ?`, sessionID, sink)
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

func tsOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ts(t)
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
	err := db.db.QueryRowContext(ctx, `SELECT state, remote_before, live_before, total_before, sent_at, archive_uri, detail
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
	err := db.db.QueryRowContext(ctx, `SELECT archive_uri FROM sink_commits WHERE session_id = ? AND sink = ? AND archive_uri != ''
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
	err := db.db.QueryRowContext(ctx, `SELECT counter, expected, commits, auto_commit FROM sink_sessions WHERE session_id = ? AND sink = ?`,
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

// ArmJob makes a job due: enqueued if new, back to pending if it was done
// or is running now (the running worker then leaves it pending, and it runs
// again for what arrived meanwhile); a parked job stays parked: its error is
// waiting for a person.
func (tx *Tx) ArmJob(ctx context.Context, kind, sessionID string, gen int, sink string) error {
	added, err := tx.Enqueue(ctx, kind, sessionID, gen, sink)
	if err != nil || added {
		return err
	}
	_, err = tx.tx.ExecContext(ctx, `UPDATE jobs SET state = ?, next_attempt_at = ?, lease_owner = '', lease_until = NULL, updated_at = ?
		WHERE kind = ? AND session_id = ? AND generation = ? AND sink = ? AND state IN (?, ?)`,
		JobPending, ts(tx.now), ts(tx.now), kind, sessionID, gen, sink, JobDone, JobLeased)
	return err
}

// TurnsUpTo returns a session's turns of generations up to gen, in order.
func (db *DB) TurnsUpTo(ctx context.Context, sessionID string, gen int) ([]StoredTurn, error) {
	return list(ctx, db.db, scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND generation <= ? ORDER BY generation, offset, key`, sessionID, gen)
}

const turnCols = `session_id, key, generation, offset, data`

func scanTurn(s scanner) (StoredTurn, error) {
	var t StoredTurn
	err := s.Scan(&t.SessionID, &t.Key, &t.Generation, &t.Offset, &t.Data)
	return t, err
}

// Meta is the value stored under key ("" when there is none).
func (db *DB) Meta(ctx context.Context, key string) (string, error) { return getMeta(ctx, db.db, key) }

func getMeta(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// PutMeta stores value under key.
func (tx *Tx) PutMeta(ctx context.Context, key, value string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// Fold is a session's checkpoint fold as capture keeps it.
type Fold struct {
	UpTo     int64    // the rollout offset it covers: the turns before it
	State    string   // checkpoint.Fold JSON
	Sections []string // cx context sections already in the rollout
}

func getFold(ctx context.Context, q querier, id string) (Fold, bool, error) {
	var f Fold
	var secs string
	err := q.QueryRowContext(ctx, `SELECT upto, fold, sections FROM session_folds WHERE session_id = ?`, id).Scan(&f.UpTo, &f.State, &secs)
	if errors.Is(err, sql.ErrNoRows) {
		return f, false, nil
	}
	f.Sections = parseList(secs)
	return f, err == nil, err
}

// Fold returns a session's fold (false: none kept).
func (tx *Tx) Fold(ctx context.Context, id string) (Fold, bool, error) {
	return getFold(ctx, tx.tx, id)
}

// Fold returns a session's fold (false: none kept).
func (db *DB) Fold(ctx context.Context, id string) (Fold, bool, error) {
	return getFold(ctx, db.db, id)
}

// PutFold stores a session's fold.
func (tx *Tx) PutFold(ctx context.Context, id string, f Fold) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO session_folds (session_id, upto, fold, sections) VALUES (?,?,?,?)
		ON CONFLICT(session_id) DO UPDATE SET upto=excluded.upto, fold=excluded.fold, sections=excluded.sections`,
		id, f.UpTo, f.State, jsonList(f.Sections))
	if err != nil {
		return fmt.Errorf("put checkpoint fold of %s: %w", id, err)
	}
	return nil
}

// TurnsFrom returns a session's turns starting at or after offset, in
// rollout order.
func (tx *Tx) TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]StoredTurn, error) {
	return turnsFrom(ctx, tx.tx, sessionID, offset)
}

// TurnsFrom returns a session's turns starting at or after offset, in
// rollout order.
func (db *DB) TurnsFrom(ctx context.Context, sessionID string, offset int64) ([]StoredTurn, error) {
	return turnsFrom(ctx, db.db, sessionID, offset)
}

func turnsFrom(ctx context.Context, q querier, sessionID string, offset int64) ([]StoredTurn, error) {
	return list(ctx, q, scanTurn, `SELECT `+turnCols+` FROM turns WHERE session_id = ? AND offset >= ? ORDER BY offset, key`, sessionID, offset)
}

// SetGenerationCheckpoint records a generation's checkpoint at its end.
func (tx *Tx) SetGenerationCheckpoint(ctx context.Context, sessionID string, gen int, cp string) error {
	_, err := tx.tx.ExecContext(ctx, `UPDATE generations SET checkpoint = ? WHERE session_id = ? AND generation = ?`, cp, sessionID, gen)
	return err
}

// GenerationCheckpoint is a generation's checkpoint at its end ("" when
// none was recorded: ended before cx kept folds).
func (db *DB) GenerationCheckpoint(ctx context.Context, sessionID string, gen int) (string, error) {
	var cp string
	err := db.db.QueryRowContext(ctx, `SELECT checkpoint FROM generations WHERE session_id = ? AND generation = ?`, sessionID, gen).Scan(&cp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return cp, err
}

// ErrAmbiguous means a session id prefix names more than one session.
var ErrAmbiguous = errors.New("ambiguous")

// ResolveSession returns the session whose id is id, or else the one
// session whose id starts with id (as git takes a commit's prefix).
func (db *DB) ResolveSession(ctx context.Context, id string) (string, error) {
	if id == "" {
		return id, fmt.Errorf("no session id: %w", ErrNotFound)
	}
	// One range over the primary key (not LIKE: ids may hold '_' and '%'):
	// the id itself, if it is one, sorts first.
	ids, err := list(ctx, db.db, func(r scanner) (string, error) {
		var s string
		return s, r.Scan(&s)
	}, `SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 3`, id, id+"\U0010FFFF")
	switch {
	case err != nil:
		return id, err
	case len(ids) == 0:
		return id, fmt.Errorf("session %s: %w", id, ErrNotFound)
	case ids[0] == id || len(ids) == 1:
		return ids[0], nil
	}
	more := ""
	if len(ids) > 2 {
		more = ", …"
	}
	return id, fmt.Errorf("session id prefix %s is %w: %s, %s%s", id, ErrAmbiguous, ids[0], ids[1], more)
}
