package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The guarantees exactly-once rests on, tested on the ledger alone: racing
// enders (each on a connection of its own, as separate processes are) end
// each generation once, and the outbox leases a job to one worker at a
// time, gives an abandoned lease to the next, and never a job not due.

// endOnce is an ender's transaction, as lifecycle's endInTx does it: read
// the session; if generation gen is still live, record its end, enqueue its
// commits, and mark the session ended. checked=false leaves out the status
// check (a buggy ender): the generations table's key must still refuse a
// second end.
func endOnce(ctx context.Context, db *DB, id string, gen int, sinks []string, checked bool) (bool, error) {
	won := false
	err := db.Tx(ctx, func(tx *Tx) error {
		won = false
		s, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		if checked && (s.Status != Live || s.Generation != gen) {
			return nil
		}
		now := tx.Now()
		if err := tx.InsertGeneration(ctx, Generation{SessionID: id, Generation: gen, Status: Ended, EndReason: "race", Sinks: sinks, EndedAt: now}); err != nil {
			return err
		}
		for _, sink := range sinks {
			if _, err := tx.Enqueue(ctx, "commit", id, gen, sink); err != nil {
				return err
			}
		}
		s.Status, s.EndedAt = Ended, &now
		won = true
		return tx.PutSession(ctx, s)
	})
	return won && err == nil, err
}

// reopen makes the session's next generation live, as a new turn does.
func reopen(ctx context.Context, db *DB, id string) error {
	return db.Tx(ctx, func(tx *Tx) error {
		s, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		s.Generation++
		s.Status, s.EndedAt = Live, nil
		return tx.PutSession(ctx, s)
	})
}

func TestOneEndPerGeneration(t *testing.T) {
	for _, tc := range []struct {
		name        string
		enders      int
		generations int
		sinks       []string
		checked     bool
	}{
		{"two enders, one generation", 2, 1, []string{"local"}, true},
		{"eight enders, five generations, two sinks", 8, 5, []string{"local", "openviking"}, true},
		{"enders without the status check: the key referees", 6, 3, []string{"local"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path := filepath.Join(t.TempDir(), FileName)
			db := open(t, path)
			conns := make([]*DB, tc.enders)
			for i := range conns {
				conns[i] = open(t, path)
			}
			now := time.Now().UTC()
			if err := db.Tx(ctx, func(tx *Tx) error {
				return tx.PutSession(ctx, Session{ID: "s", Status: Live, Generation: 1, CreatedAt: now, LastSeen: now})
			}); err != nil {
				t.Fatal(err)
			}
			for gen := 1; gen <= tc.generations; gen++ {
				var wins, refused int
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := make(chan struct{})
				for _, c := range conns {
					wg.Add(1)
					go func(c *DB) {
						defer wg.Done()
						<-start
						won, err := endOnce(ctx, c, "s", gen, tc.sinks, tc.checked)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err != nil && !tc.checked:
							refused++ // the second insert of a generation
						case err != nil:
							t.Errorf("generation %d: %v", gen, err)
						case won:
							wins++
						}
					}(c)
				}
				close(start)
				wg.Wait()
				if wins != 1 {
					t.Fatalf("generation %d ended %d times by %d racing enders, want once", gen, wins, tc.enders)
				}
				if !tc.checked && refused != tc.enders-1 {
					t.Fatalf("generation %d: %d enders refused, want %d", gen, refused, tc.enders-1)
				}
				if gen < tc.generations {
					if err := reopen(ctx, db, "s"); err != nil {
						t.Fatal(err)
					}
				}
			}
			gens, err := db.Generations(ctx, "s")
			if err != nil || len(gens) != tc.generations {
				t.Fatalf("%d generations recorded (%v), want %d", len(gens), err, tc.generations)
			}
			jobs, err := db.SessionJobs(ctx, "s")
			if err != nil || len(jobs) != tc.generations*len(tc.sinks) {
				t.Fatalf("%d commit jobs (%v), want one per generation and sink: %d", len(jobs), err, tc.generations*len(tc.sinks))
			}
		})
	}
}

// change is a test's setup that edits the job as stored.
func change(edit func(tx *Tx, j *Job)) func(ctx context.Context, tx *Tx, id int64) error {
	return func(ctx context.Context, tx *Tx, id int64) error {
		j, err := tx.Job(ctx, id)
		if err != nil {
			return err
		}
		edit(tx, &j)
		return tx.UpdateJob(ctx, j)
	}
}

func TestJobLeases(t *testing.T) {
	type step struct {
		owner string
		lease time.Duration // negative: a lease already expired (a worker that died)
		only  []int64
		want  bool // a job is leased
	}
	for _, tc := range []struct {
		name  string
		setup func(ctx context.Context, tx *Tx, id int64) error
		steps []step
	}{
		{"a pending job is leased once", nil, []step{{"a", time.Minute, nil, true}, {"b", time.Minute, nil, false}}},
		{"a dead worker's lease passes to the next", nil, []step{{"a", -time.Second, nil, true}, {"b", time.Minute, nil, true}, {"c", time.Minute, nil, false}}},
		{"a job backing off is not due", change(func(tx *Tx, j *Job) { j.Attempts, j.NextAttemptAt = 1, tx.Now().Add(time.Hour) }),
			[]step{{"a", time.Minute, nil, false}}},
		{"a parked job waits for retry", change(func(_ *Tx, j *Job) { j.State = JobParked }), []step{{"a", time.Minute, nil, false}}},
		{"a done job is not leased, until armed again", func(ctx context.Context, tx *Tx, id int64) error {
			if err := change(func(_ *Tx, j *Job) { j.State = JobDone })(ctx, tx, id); err != nil {
				return err
			}
			return tx.ArmJob(ctx, "append", "s", 1, "openviking")
		}, []step{{"a", time.Minute, nil, true}}},
		{"only the jobs named", nil, []step{{"a", time.Minute, []int64{999}, false}, {"a", time.Minute, []int64{1}, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			path := filepath.Join(t.TempDir(), FileName)
			db := open(t, path)
			var id int64
			err := db.Tx(ctx, func(tx *Tx) error {
				if _, err := tx.Enqueue(ctx, "append", "s", 1, "openviking"); err != nil {
					return err
				}
				jobs, err := listJobs(ctx, tx.tx, `WHERE session_id = ?`, "s")
				if err != nil || len(jobs) != 1 {
					return fmt.Errorf("%d jobs: %v", len(jobs), err)
				}
				id = jobs[0].ID
				if tc.setup != nil {
					return tc.setup(ctx, tx, id)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.steps {
				worker := open(t, path) // each worker a process of its own
				var j Job
				var ok bool
				err := worker.Tx(ctx, func(tx *Tx) error {
					var err error
					j, ok, err = tx.LeaseJob(ctx, st.owner, st.lease, st.only)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if ok != st.want {
					t.Fatalf("step %d (%s): leased %v, want %v", i, st.owner, ok, st.want)
				}
				if ok && (j.ID != id || j.LeaseOwner != st.owner || j.State != JobLeased) {
					t.Fatalf("step %d: leased %+v", i, j)
				}
			}
		})
	}
}
