package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Table jobs: the outbox — commits, appends and deferred ends, leased to
// one worker at a time, retried with backoff, parked after too many
// failures. Written by lifecycle (ends enqueue; workers lease and settle).

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

func listJobs(ctx context.Context, q querier, where string, args ...any) ([]Job, error) {
	return list(ctx, q, scanJob, `SELECT `+jobCols+` FROM jobs `+where, args...)
}

// Jobs returns jobs in the given states (all when none), oldest first.
func (db *DB) Jobs(ctx context.Context, states ...string) ([]Job, error) {
	if len(states) == 0 {
		return listJobs(ctx, db.q(), `ORDER BY id`)
	}
	b, _ := json.Marshal(states)
	return listJobs(ctx, db.q(), `WHERE state IN (SELECT value FROM json_each(?)) ORDER BY id`, string(b))
}

// SessionJobs returns one session's jobs, oldest first.
func (db *DB) SessionJobs(ctx context.Context, sessionID string) ([]Job, error) {
	return listJobs(ctx, db.q(), `WHERE session_id = ? ORDER BY id`, sessionID)
}

// DueJobs reports whether any job is due now (cheap: lets a hook decide
// whether to start outbox work at all).
func (db *DB) DueJobs(ctx context.Context, now time.Time) (bool, error) {
	var n int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs WHERE (state = ? AND next_attempt_at <= ?) OR (state = ? AND lease_until <= ?) LIMIT 1)`,
		JobPending, ts(now), JobLeased, ts(now)).Scan(&n)
	return n > 0, err
}

// JobsWaiting reports whether any job waits to be done, due now or later
// (pending, or leased by a worker): a host's loop keeps looking every
// second while one does.
func (db *DB) JobsWaiting(ctx context.Context) (bool, error) {
	var n int
	err := db.q().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state IN (?, ?) LIMIT 1)`, JobPending, JobLeased).Scan(&n)
	return n > 0, err
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

// WaitingJobs returns the pending jobs waiting out a backoff (not due yet).
func (tx *Tx) WaitingJobs(ctx context.Context) ([]Job, error) {
	return listJobs(ctx, tx.tx, `WHERE state = ? AND next_attempt_at > ? ORDER BY id`, JobPending, ts(tx.now))
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
