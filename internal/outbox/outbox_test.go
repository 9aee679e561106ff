package outbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/sink"
)

// fakeSink records what it was asked to commit and answers with err.
type fakeSink struct {
	mu   sync.Mutex
	got  []sink.Request
	err  error
	apps int
}

func (f *fakeSink) Commit(ctx context.Context, req sink.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, req)
	return f.err
}

func (f *fakeSink) Append(ctx context.Context, s ledger.Session, upTo int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apps++
	return nil
}

// ended is a session whose generation 1 (two turns) has ended, with a
// commit job for each sink named.
func ended(t *testing.T, sinks ...string) (*ledger.DB, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	home := t.TempDir()
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	err = db.Tx(ctx, func(tx *ledger.Tx) error {
		now := tx.Now()
		if err := tx.PutSession(ctx, ledger.Session{ID: "s1", Status: ledger.Ended, Generation: 1, Sinks: sinks, CreatedAt: now, LastSeen: now}); err != nil {
			return err
		}
		if err := tx.InsertGeneration(ctx, ledger.Generation{SessionID: "s1", Generation: 1, Status: ledger.Ended, EndReason: "exit", Sinks: sinks, Turns: 2, EndedAt: now}); err != nil {
			return err
		}
		for i, data := range []string{`{"key":"t1","user":"first"}`, `{"key":"t2","user":"second"}`, `not json`} {
			if _, err := tx.UpsertTurn(ctx, ledger.StoredTurn{SessionID: "s1", Key: string(rune('a' + i)), Generation: 1, Offset: int64(i), Data: data}); err != nil {
				return err
			}
		}
		for _, s := range sinks {
			if _, err := tx.Enqueue(ctx, JobCommit, "s1", 1, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db, ctx
}

func newOutbox(db *ledger.DB, sinks map[string]sink.Sink, settled *[]int) *Outbox {
	o := New(db, sinks, logs.New(""), 3)
	o.Settle = func(ctx context.Context, tx *ledger.Tx, sessionID string, gen int) error {
		*settled = append(*settled, gen)
		return nil
	}
	return o
}

func jobs(t *testing.T, ctx context.Context, db *ledger.DB) map[string]ledger.Job {
	t.Helper()
	all, err := db.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ledger.Job{}
	for _, j := range all {
		out[j.Kind+"/"+j.Sink] = j
	}
	return out
}

// Each sink gets the generation with its turns (one that does not decode
// left out); the generation settles once, when the last commit is done.
func TestWorkCommitsAndSettles(t *testing.T) {
	db, ctx := ended(t, "a", "b")
	a, b := &fakeSink{}, &fakeSink{}
	var settled []int
	o := newOutbox(db, map[string]sink.Sink{"a": a, "b": b}, &settled)
	n, err := o.Work(ctx, nil)
	if err != nil || n != 2 {
		t.Fatalf("worked %d jobs, %v; want 2", n, err)
	}
	for name, f := range map[string]*fakeSink{"a": a, "b": b} {
		if len(f.got) != 1 || len(f.got[0].Turns) != 2 || f.got[0].Turns[1].User != "second" || f.got[0].Generation.Generation != 1 {
			t.Errorf("sink %s got %+v", name, f.got)
		}
	}
	if len(settled) != 1 || settled[0] != 1 {
		t.Errorf("settled %v, want generation 1 once", settled)
	}
	for k, j := range jobs(t, ctx, db) {
		if j.State != ledger.JobDone {
			t.Errorf("job %s: %s", k, j.State)
		}
	}
	if n, _ := o.Work(ctx, nil); n != 0 {
		t.Errorf("a second pass worked %d jobs", n)
	}
}

// A failure is retried with backoff until MaxAttempts, then parked; a
// permanent one (or a sink this build lacks) is parked at once; Retry puts
// a parked job back, due now, its attempts counted anew.
func TestFailuresRetryParkAndRetry(t *testing.T) {
	t.Setenv("CX_TEST_BACKOFF", "200ms")
	db, ctx := ended(t, "flaky", "broken", "gone")
	flaky := &fakeSink{err: errors.New("503 from the server")}
	broken := &fakeSink{err: &sink.PermanentError{Err: errors.New("bad credentials")}}
	var settled []int
	o := newOutbox(db, map[string]sink.Sink{"flaky": flaky, "broken": broken}, &settled)
	o.Work(ctx, nil)
	js := jobs(t, ctx, db)
	if j := js["commit/flaky"]; j.State != ledger.JobPending || j.Attempts != 1 || !strings.Contains(j.LastError, "503") || !j.NextAttemptAt.After(j.UpdatedAt.Add(-time.Second)) {
		t.Errorf("flaky after one failure: %+v", j)
	}
	for _, k := range []string{"commit/broken", "commit/gone"} {
		if j := js[k]; j.State != ledger.JobParked || j.Attempts != 1 {
			t.Errorf("%s: %+v, want parked at once", k, j)
		}
	}
	for i := 0; i < 40 && jobs(t, ctx, db)["commit/flaky"].State == ledger.JobPending; i++ {
		time.Sleep(50 * time.Millisecond) // until the backoff (200 ms, then 400, jittered) has passed
		o.Work(ctx, nil)
	}
	if j := jobs(t, ctx, db)["commit/flaky"]; j.State != ledger.JobParked || j.Attempts != 3 {
		t.Fatalf("flaky after MaxAttempts: %+v", j)
	}
	flaky.err = nil
	r, err := o.Retry(ctx, nil, true)
	if err != nil || r.Parked != 3 {
		t.Fatalf("Retry: %+v, %v; want the 3 parked back", r, err)
	}
	broken.err = nil
	o.Sinks["gone"] = &fakeSink{}
	if n, err := o.Work(ctx, nil); n != 3 || err != nil {
		t.Fatalf("after Retry worked %d, %v", n, err)
	}
	if len(settled) != 1 {
		t.Errorf("settled %v, want once", settled)
	}
}

// An end job ends through End with its reason and goes to no sink; an
// append job appends to a sink that takes appends.
func TestEndAndAppendJobs(t *testing.T) {
	db, ctx := ended(t)
	err := db.Tx(ctx, func(tx *ledger.Tx) error {
		if _, err := tx.EnqueueDetail(ctx, JobEnd, "s1", 1, "", "session_end"); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, JobAppend, "s1", 1, "remote")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	remote := &fakeSink{}
	var settled []int
	o := newOutbox(db, map[string]sink.Sink{"remote": remote}, &settled)
	var endedWith []string
	o.End = func(ctx context.Context, id, reason string) error {
		endedWith = append(endedWith, id+" "+reason)
		return nil
	}
	if n, err := o.Work(ctx, nil); n != 2 || err != nil {
		t.Fatalf("worked %d, %v", n, err)
	}
	if len(endedWith) != 1 || endedWith[0] != "s1 session_end" || remote.apps != 1 || len(remote.got) != 0 || len(settled) != 0 {
		t.Errorf("ended %v, appends %d, commits %d, settled %v", endedWith, remote.apps, len(remote.got), settled)
	}
}
