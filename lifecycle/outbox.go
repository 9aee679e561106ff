package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"cx/internal/ledger"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/testpoint"
)

// JobCommit is the kind of a generation's commit job.
const JobCommit = "commit"

// JobEnd is the kind of a job that ends a generation a hook could not end
// on Codex's time (SessionEnd on a long unread history); it goes to no
// sink, and its detail is the end reason.
const JobEnd = "end"

// defaultLease is how long a worker holds a job; an expired lease (the
// worker died) makes the job due again.
const defaultLease = 2 * time.Minute

// backoff is the wait before attempt n+1: exponential from 2 s, capped at
// one hour, with ±20 % jitter so many workers do not retry in step.
func backoff(attempts int) time.Duration {
	d := 2 * time.Second
	if t, ok := testpoint.Duration(testpoint.Backoff); ok {
		d = t // fault tests: retries without waiting seconds
	}
	for i := 1; i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	d = min(d, time.Hour)
	j := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * j)
}

// WorkOutbox runs due jobs until none is left or ctx ends. only, when not
// nil, limits it to those job ids. It returns how many jobs it finished.
func (m *Manager) WorkOutbox(ctx context.Context, only []int64) (int, error) {
	done := 0
	for ctx.Err() == nil {
		var job ledger.Job
		var ok bool
		err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
			var err error
			job, ok, err = tx.LeaseJob(ctx, m.Owner, m.Lease, only)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("lease job: %w", err)
		}
		if !ok {
			return done, nil
		}
		testpoint.Crash("leased")
		m.runJob(ctx, job)
		done++
	}
	return done, ctx.Err()
}

func (m *Manager) runJob(ctx context.Context, job ledger.Job) {
	jobErr := m.commitJob(ctx, job)
	if jobErr == nil {
		testpoint.Crash("accepted")
	}
	// Record the outcome even if ctx ended meanwhile: the sink's work is done
	// or failed, and the ledger must say which.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	record := func(tx *ledger.Tx) error {
		cur, err := tx.Job(rctx, job.ID)
		if err != nil {
			return err
		}
		if cur.State != ledger.JobLeased || cur.LeaseOwner != m.Owner {
			return nil // our lease expired and someone else took it
		}
		return m.recordOutcome(rctx, tx, cur, jobErr)
	}
	var terr error
	if jobErr == nil {
		// A success the ledger never hears of is done again once the lease
		// ends (an exec sink's command runs twice): a ledger locked past its
		// busy timeout, or a disk full for a moment, is waited out a while.
		// A failure not recorded costs nothing but the lease.
		stop := make(chan struct{})
		t := time.AfterFunc(recordRetry, func() { close(stop) })
		_, terr = m.DB.TxRetry(rctx, stop, recordPause, record)
		t.Stop()
	} else {
		terr = m.DB.Tx(rctx, record)
	}
	if terr != nil {
		m.Log.Printf("record job %d outcome: %v", job.ID, terr)
	}
}

func (m *Manager) recordOutcome(ctx context.Context, tx *ledger.Tx, job ledger.Job, jobErr error) error {
	job.LeaseOwner, job.LeaseUntil = "", nil
	if jobErr == nil {
		job.State, job.LastError = ledger.JobDone, ""
		if err := tx.UpdateJob(ctx, job); err != nil {
			return err
		}
		_ = tx.AddEvent(ctx, "job.done", job.SessionID, "", fmt.Sprintf("%s g%d %s", job.Kind, job.Generation, job.Sink))
		if job.Kind != JobCommit {
			return nil // only commits settle a generation
		}
		return m.settleGeneration(ctx, tx, job.SessionID, job.Generation)
	}
	job.Attempts++
	// One bounded line: status prints one per job, whatever a sink answered.
	job.LastError = rollout.OneLine(redact.String(jobErr.Error()), maxJobError)
	var perm *sink.PermanentError
	if errors.As(jobErr, &perm) || job.Attempts >= m.Cfg.Lifecycle.MaxAttempts {
		job.State = ledger.JobParked
		_ = tx.AddEvent(ctx, "job.parked", job.SessionID, "", fmt.Sprintf("%s g%d %s: %s", job.Kind, job.Generation, job.Sink, job.LastError))
	} else {
		job.State = ledger.JobPending
		job.NextAttemptAt = tx.Now().Add(backoff(job.Attempts))
		_ = tx.AddEvent(ctx, "job.retry", job.SessionID, "", fmt.Sprintf("%s g%d %s attempt %d: %s", job.Kind, job.Generation, job.Sink, job.Attempts, job.LastError))
	}
	return tx.UpdateJob(ctx, job)
}

// recordRetry is how long a job's success is tried again while the
// ledger cannot take it for a reason that passes (a lock held past the
// busy timeout, a full disk); recordPause the pause between tries.
const (
	recordRetry = 5 * time.Second
	recordPause = 200 * time.Millisecond
)

// maxJobError bounds the error a job keeps.
const maxJobError = 400

// settleGeneration marks a generation committed once every sink's job is done.
func (m *Manager) settleGeneration(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error {
	jobs, err := tx.GenerationJobs(ctx, sessionID, gen)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Kind == JobCommit && j.State != ledger.JobDone {
			return nil
		}
	}
	if err := tx.SetGenerationStatus(ctx, sessionID, gen, ledger.Committed); err != nil {
		return err
	}
	s, err := tx.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	if s.Generation == gen && s.Status == ledger.Ended {
		s.Status = ledger.Committed
		if err := tx.PutSession(ctx, s); err != nil {
			return err
		}
	}
	return tx.AddEvent(ctx, "generation.committed", sessionID, s.RunID, fmt.Sprintf("g%d", gen))
}

func (m *Manager) commitJob(ctx context.Context, job ledger.Job) error {
	if job.Kind == JobEnd {
		// What the hook would have ended: whatever is live once caught up.
		_, err := m.End(ctx, job.SessionID, job.Detail, EndOptions{})
		return err
	}
	sk, ok := m.Sinks[job.Sink]
	if !ok {
		return &sink.PermanentError{Err: fmt.Errorf("sink %q is not available in this cx", job.Sink)}
	}
	s, err := m.DB.Session(ctx, job.SessionID)
	if err != nil {
		return err
	}
	if job.Kind == JobAppend {
		if a, ok := sk.(sink.Appender); ok {
			return a.Append(ctx, s, job.Generation)
		}
		return nil
	}
	gens, err := m.DB.Generations(ctx, job.SessionID)
	if err != nil {
		return err
	}
	var g *ledger.Generation
	for i := range gens {
		if gens[i].Generation == job.Generation {
			g = &gens[i]
		}
	}
	if g == nil {
		return &sink.PermanentError{Err: fmt.Errorf("generation %d of %s is not recorded", job.Generation, job.SessionID)}
	}
	stored, err := m.DB.Turns(ctx, job.SessionID, job.Generation)
	if err != nil {
		return err
	}
	turns := make([]rollout.Turn, 0, len(stored))
	for _, st := range stored {
		var t rollout.Turn
		if err := json.Unmarshal([]byte(st.Data), &t); err == nil {
			turns = append(turns, t)
		}
	}
	cp, err := m.DB.GenerationCheckpoint(ctx, job.SessionID, job.Generation)
	if err != nil {
		return err
	}
	return sk.Commit(ctx, sink.Request{Session: s, Generation: *g, Turns: turns, Job: job, Checkpoint: cp})
}

// redactTurn removes secrets from everything a turn carries.
func redactTurn(t rollout.Turn) rollout.Turn {
	t.User = redact.String(t.User)
	for i := range t.Assistant {
		t.Assistant[i] = redact.String(t.Assistant[i])
	}
	for i := range t.Tools {
		t.Tools[i].Input = redact.String(t.Tools[i].Input)
		t.Tools[i].Command = redact.String(t.Tools[i].Command)
		t.Tools[i].Output = redact.String(t.Tools[i].Output)
	}
	for i := range t.Plan {
		t.Plan[i].Step = redact.String(t.Plan[i].Step)
	}
	return t
}

// Retried is what Retry did: parked jobs put back in the outbox, and
// pending ones, waiting out a backoff, made due now.
type Retried struct {
	Parked, Waiting int
}

// Retry puts parked jobs back in the outbox and makes jobs waiting out a
// backoff due now (those named by ids, or all): after a backend comes
// back, a retry by hand does not wait for a backoff grown long in the
// outage. Each starts its count of attempts over.
func (m *Manager) Retry(ctx context.Context, ids []int64, all bool) (Retried, error) {
	var r Retried
	err := m.DB.Tx(ctx, func(tx *ledger.Tx) error {
		parked, err := tx.ParkedJobs(ctx)
		if err != nil {
			return err
		}
		waiting, err := tx.WaitingJobs(ctx)
		if err != nil {
			return err
		}
		want := map[int64]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for _, j := range append(parked, waiting...) {
			if !all && !want[j.ID] {
				continue
			}
			if j.State == ledger.JobParked {
				r.Parked++
			} else {
				r.Waiting++
			}
			j.State, j.Attempts, j.NextAttemptAt = ledger.JobPending, 0, tx.Now()
			if err := tx.UpdateJob(ctx, j); err != nil {
				return err
			}
			_ = tx.AddEvent(ctx, "job.retried", j.SessionID, "", fmt.Sprintf("job %d", j.ID))
		}
		return nil
	})
	return r, err
}
