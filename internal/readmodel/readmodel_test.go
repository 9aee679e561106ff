package readmodel

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"cx/internal/ledger"
)

// views reads a ledger of two sessions — one live in its first generation,
// one committed with a parked commit in its second — the way status,
// sessions and show print them.
func TestViews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := ledger.Open(ctx, t.TempDir(), ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Tx(ctx, func(tx *ledger.Tx) error {
		now := tx.Now()
		run := ledger.Run{ID: "run-1", PID: os.Getpid(), Sinks: []string{"local"}, StartedAt: now}
		if err := tx.PutRun(ctx, run); err != nil {
			return err
		}
		for _, s := range []ledger.Session{
			{ID: "live-1", RunID: "run-1", Status: ledger.Live, Generation: 1, Sinks: []string{"local"}, Cwd: "/w", CreatedAt: now, LastSeen: now.Add(time.Minute)},
			{ID: "done-1", Status: ledger.Ended, Generation: 2, Sinks: []string{"local"}, CreatedAt: now, LastSeen: now},
		} {
			if err := tx.PutSession(ctx, s); err != nil {
				return err
			}
		}
		for g := 1; g <= 2; g++ {
			st := ledger.Committed
			if g == 2 {
				st = ledger.Ended
			}
			if err := tx.InsertGeneration(ctx, ledger.Generation{SessionID: "done-1", Generation: g, Status: st, EndReason: "exit", Turns: 1, EndedAt: now}); err != nil {
				return err
			}
		}
		if _, err := tx.Enqueue(ctx, "commit", "done-1", 2, "local"); err != nil {
			return err
		}
		return tx.AddEvent(ctx, "generation.ended", "done-1", "", "g2 exit")
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs, _ := db.Jobs(ctx)
	err = db.Tx(ctx, func(tx *ledger.Tx) error {
		j := jobs[0]
		j.State, j.Attempts, j.LastError = ledger.JobParked, 5, "503"
		return tx.UpdateJob(ctx, j)
	})
	if err != nil {
		t.Fatal(err)
	}

	all, err := Sessions(ctx, db)
	if err != nil || len(all) != 2 || all[0].ID != "live-1" || all[1].Commits != 1 {
		t.Fatalf("sessions: %+v, %v (most recently seen first; done-1 has one commit)", all, err)
	}
	var text bytes.Buffer
	WriteSessions(&text, all, true, 0)
	if !strings.Contains(text.String(), "live-1") || !strings.Contains(text.String(), "done-1") {
		t.Errorf("sessions as text:\n%s", text.String())
	}
	st, err := Status(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 1 || st.Runs[0].State != "running" || len(st.LiveSessions) != 1 || len(st.Parked) != 1 || len(st.Pending) != 0 {
		t.Errorf("status: %+v", st)
	}
	if got := JobState(st.Parked[0]); got != "parked, 5 failed attempt(s)" {
		t.Errorf("JobState: %q", got)
	}
	show, err := Show(ctx, db, "done-1")
	if err != nil || show.Session.ID != "done-1" {
		t.Fatalf("show: %+v, %v", show, err)
	}
	if _, err := Lookup(ctx, db, "nobody"); !errors.Is(err, ErrNoSession) || !NotFound(err) {
		t.Errorf("Lookup of an unknown session: %v", err)
	}
}

func TestLeaseHolder(t *testing.T) {
	for owner, want := range map[string]string{"pid:4242:1700000000": "pid 4242", "someone": "someone", "pid:x": "pid:x"} {
		if got := LeaseHolder(owner); got != want {
			t.Errorf("LeaseHolder(%q) = %q, want %q", owner, got, want)
		}
	}
}
