// Package outbox is the outbox of session ends: the jobs that commit a
// generation to each of its sinks (and append a live one's new turns, and
// end one a hook could not), worked by whichever cx process takes a job's
// lease, retried with backoff, parked after too many failures or one a sink
// calls permanent. lifecycle enqueues the jobs with the end that causes
// them (in its transaction) and settles a generation once every commit is
// done; this package runs them and records each outcome in one
// transaction.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/redact"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/testpoint"
)

// Job kinds.
const (
	// JobCommit commits a generation to one sink.
	JobCommit = "commit"
	// JobAppend sends a live generation's new turns to a remote sink (on
	// Stop), ahead of its commit.
	JobAppend = "append"
	// JobEnd ends a generation a hook could not end on Codex's time
	// (SessionEnd on a long unread history); it goes to no sink, and its
	// detail is the end reason.
	JobEnd = "end"
)

// Outbox works the ledger's jobs for one cx process.
type Outbox struct {
	DB    *ledger.DB
	Sinks map[string]sink.Sink
	Log   *logs.Logger
	// Owner names this process in job leases; Lease is how long it holds one.
	Owner       string
	Lease       time.Duration
	MaxAttempts int
	// End ends the live generation of a session a JobEnd names, with the
	// job's reason (lifecycle's End).
	End func(ctx context.Context, sessionID, reason string) error
	// Settle records, in the transaction that records a generation's last
	// commit done, that the generation is committed (lifecycle's state).
	Settle func(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error
}

// New returns the outbox of one process, its lease the default (or the
// fault tests' shorter one).
func New(db *ledger.DB, sinks map[string]sink.Sink, log *logs.Logger, maxAttempts int) *Outbox {
	o := &Outbox{DB: db, Sinks: sinks, Log: log, MaxAttempts: maxAttempts, Lease: defaultLease,
		Owner: fmt.Sprintf("pid:%d:%d", os.Getpid(), time.Now().UnixNano())}
	if d, ok := testpoint.Duration(testpoint.Lease); ok {
		o.Lease = d // crash-point tests: a dead worker's lease expires quickly
	}
	return o
}

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

// Work runs due jobs until none is left or ctx ends. only, when not nil,
// limits it to those job ids. It returns how many jobs it finished.
func (o *Outbox) Work(ctx context.Context, only []int64) (int, error) {
	done := 0
	for ctx.Err() == nil {
		if only == nil {
			// Most looks find nothing due (a run's start, a host's tick,
			// the look after the last job): a read says so without the
			// write lock every writer of CX_HOME waits on.
			if due, err := o.DB.DueJobs(ctx, o.DB.Now()); err == nil && !due {
				return done, nil
			}
		}
		var job ledger.Job
		var ok bool
		err := o.DB.Tx(ctx, func(tx *ledger.Tx) error {
			var err error
			job, ok, err = tx.LeaseJob(ctx, o.Owner, o.Lease, only)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("lease job: %w", err)
		}
		if !ok {
			return done, nil
		}
		testpoint.Crash("leased")
		o.runJob(ctx, job)
		done++
	}
	return done, ctx.Err()
}

// LeasedElsewhere lists the jobs another worker holds a live lease on.
func (o *Outbox) LeasedElsewhere(ctx context.Context, now time.Time) ([]ledger.Job, error) {
	jobs, err := o.DB.Jobs(ctx, ledger.JobLeased)
	if err != nil {
		return nil, err
	}
	var out []ledger.Job
	for _, j := range jobs {
		if j.LeaseOwner != o.Owner && j.LeaseUntil != nil && j.LeaseUntil.After(now) {
			out = append(out, j)
		}
	}
	return out, nil
}

func (o *Outbox) runJob(ctx context.Context, job ledger.Job) {
	jobErr := o.commitJob(ctx, job)
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
		if cur.State != ledger.JobLeased || cur.LeaseOwner != o.Owner {
			return nil // our lease expired and someone else took it
		}
		return o.recordOutcome(rctx, tx, cur, jobErr)
	}
	var terr error
	if jobErr == nil {
		// A success the ledger never hears of is done again once the lease
		// ends (an exec sink's command runs twice): a ledger locked past its
		// busy timeout, or a disk full for a moment, is waited out a while.
		// A failure not recorded costs nothing but the lease.
		if terr = o.DB.Tx(rctx, record); terr != nil && ledger.Passing(terr) {
			o.Log.Printf("record job %d's success: %v; trying again for up to %v", job.ID, terr, recordRetry)
			select { // TxRetry tries at once: the pause comes first
			case <-time.After(recordPause):
			case <-rctx.Done():
			}
			stop := make(chan struct{})
			t := time.AfterFunc(recordRetry, func() { close(stop) })
			_, terr = o.DB.TxRetry(rctx, stop, recordPause, record)
			t.Stop()
		}
	} else {
		terr = o.DB.Tx(rctx, record)
	}
	if terr != nil {
		o.Log.Printf("record job %d outcome: %v", job.ID, terr)
	}
}

func (o *Outbox) recordOutcome(ctx context.Context, tx *ledger.Tx, job ledger.Job, jobErr error) error {
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
		return o.settle(ctx, tx, job.SessionID, job.Generation)
	}
	job.Attempts++
	// One bounded line: status prints one per job, whatever a sink answered.
	job.LastError = rollout.OneLine(redact.String(jobErr.Error()), maxJobError)
	var perm *sink.PermanentError
	if errors.As(jobErr, &perm) || job.Attempts >= o.MaxAttempts {
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

// settle marks a generation committed (Settle) once every sink's commit
// job is done.
func (o *Outbox) settle(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error {
	jobs, err := tx.GenerationJobs(ctx, sessionID, gen)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Kind == JobCommit && j.State != ledger.JobDone {
			return nil
		}
	}
	if o.Settle == nil {
		return nil
	}
	return o.Settle(ctx, tx, sessionID, gen)
}

func (o *Outbox) commitJob(ctx context.Context, job ledger.Job) error {
	if job.Kind == JobEnd {
		// What the hook would have ended: whatever is live once caught up.
		return o.End(ctx, job.SessionID, job.Detail)
	}
	sk, ok := o.Sinks[job.Sink]
	if !ok {
		return &sink.PermanentError{Err: fmt.Errorf("sink %q is not available in this cx", job.Sink)}
	}
	s, err := o.DB.Session(ctx, job.SessionID)
	if err != nil {
		return err
	}
	if job.Kind == JobAppend {
		if a, ok := sk.(sink.Appender); ok {
			return a.Append(ctx, s, job.Generation)
		}
		return nil
	}
	gens, err := o.DB.Generations(ctx, job.SessionID)
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
	stored, err := o.DB.Turns(ctx, job.SessionID, job.Generation)
	if err != nil {
		return err
	}
	turns := sink.Turns(stored)
	cp, err := o.DB.GenerationCheckpoint(ctx, job.SessionID, job.Generation)
	if err != nil {
		return err
	}
	return sk.Commit(ctx, sink.Request{Session: s, Generation: *g, Turns: turns, Job: job, Checkpoint: cp})
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
func (o *Outbox) Retry(ctx context.Context, ids []int64, all bool) (Retried, error) {
	var r Retried
	err := o.DB.Tx(ctx, func(tx *ledger.Tx) error {
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
