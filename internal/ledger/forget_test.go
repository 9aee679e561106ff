package ledger

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Forget reaches what a run was started with, a job's error and an
// event's detail: a run that started only the forgotten session keeps no
// argument, one that started others keeps its flags only; the event log
// stays append-only for every other change.
func TestForgetReachesRunsJobsEvents(t *testing.T) {
	ctx := context.Background()
	db, err := openWriter(ctx, filepath.Join(t.TempDir(), FileName), Options{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Tx(ctx, func(tx *Tx) error {
		now := tx.Now()
		for _, r := range []Run{
			{ID: "r-alone", PID: 1, Args: []string{"exec", "remember the narwhal please"}, StartedAt: now},
			{ID: "r-shared", PID: 2, Args: []string{"--model=gpt-5.5", "-c", "x=1", "remember the narwhal please"}, StartedAt: now},
		} {
			if err := tx.PutRun(ctx, r); err != nil {
				return err
			}
		}
		for _, s := range []Session{{ID: "s1", RunID: "r-alone"}, {ID: "s2", RunID: "r-shared"}, {ID: "s3", RunID: "r-shared"}} {
			s.Status, s.CreatedAt, s.LastSeen = Committed, now, now
			if err := tx.PutSession(ctx, s); err != nil {
				return err
			}
		}
		return tx.AddEvent(ctx, "job.parked", "s2", "r-shared", "exec sink said: narwhal")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1", "s2"} {
		if err := db.Tx(ctx, func(tx *Tx) error { _, err := tx.Forget(ctx, id); return err }); err != nil {
			t.Fatalf("forget %s: %v", id, err)
		}
	}
	for id, want := range map[string][]string{"r-alone": {}, "r-shared": {"--model", "-c"}} {
		r, err := db.Run(ctx, id)
		if err != nil || !reflect.DeepEqual(r.Args, want) {
			t.Errorf("run %s args after forget: %q (%v), want %q", id, r.Args, err, want)
		}
	}
	var detail string
	if err := db.db.QueryRow(`SELECT detail FROM events WHERE session_id = 's2' AND kind = 'job.parked'`).Scan(&detail); err != nil || detail != "" {
		t.Errorf("event detail after forget: %q, %v", detail, err)
	}
	if _, err := db.db.Exec(`UPDATE events SET kind = 'other' WHERE session_id = 's2'`); err == nil {
		t.Error("the event log took an update other than a blanked detail")
	}
	if _, err := db.db.Exec(`DELETE FROM events`); err == nil {
		t.Error("the event log took a delete")
	}
}
