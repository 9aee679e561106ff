package ledger

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func open(t testing.TB, path string) *DB {
	t.Helper()
	db, err := openWriter(context.Background(), path, Options{BusyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesPrivateFilesAndMigrates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(dir, FileName)
	db := open(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", fi.Mode().Perm())
	}
	var v int
	if err := db.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("user_version %d (%v), want %d", v, err, SchemaVersion)
	}
	var mode string
	_ = db.db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Fatalf("journal mode %q", mode)
	}
	// Opening again is a no-op migration.
	db2 := open(t, path)
	if err := db2.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if fi, err := os.Stat(path + suffix); err == nil && fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s mode %v", suffix, fi.Mode().Perm())
		}
	}
}

func TestDamagedLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte("this is not a database, but it is long enough to look like a header......"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openWriter(context.Background(), path, Options{})
	if err == nil {
		t.Fatal("opened a damaged ledger")
	}
	t.Logf("error: %v", err)
}

func TestEnqueueUniqueAndEventsAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), FileName))
	var added []bool
	for i := 0; i < 3; i++ {
		err := db.Tx(ctx, func(tx *Tx) error {
			ok, err := tx.Enqueue(ctx, "commit", "s1", 1, "local")
			added = append(added, ok)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !added[0] || added[1] || added[2] {
		t.Fatalf("enqueue results %v", added)
	}
	if err := db.Tx(ctx, func(tx *Tx) error { return tx.AddEvent(ctx, "test", "s1", "", "x") }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.db.Exec(`DELETE FROM events`); err == nil {
		t.Fatal("deleted from the append-only event log")
	}
	if _, err := db.db.Exec(`UPDATE events SET detail = 'y'`); err == nil {
		t.Fatal("updated the append-only event log")
	}
}

// Two workers never lease the same job.
func TestLeaseExclusive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db := open(t, path)
	for i := 0; i < 20; i++ {
		_ = db.Tx(ctx, func(tx *Tx) error {
			_, err := tx.Enqueue(ctx, "commit", "s", i, "local")
			return err
		})
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			other := open(t, path) // a connection of its own, as another process would have
			for {
				var j Job
				var ok bool
				err := other.Tx(ctx, func(tx *Tx) error {
					var err error
					j, ok, err = tx.LeaseJob(ctx, "w", time.Minute, nil)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := seen[j.ID]; dup {
					t.Errorf("job %d leased twice (%s)", j.ID, prev)
				}
				seen[j.ID] = "taken"
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(seen) != 20 {
		t.Fatalf("leased %d of 20 jobs", len(seen))
	}
}

// A job waits while it is pending (due now or later) or leased, and no
// longer once done or parked.
func TestJobsWaiting(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), FileName))
	waiting := func() bool {
		t.Helper()
		w, err := db.JobsWaiting(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if waiting() {
		t.Fatal("an empty ledger has a job waiting")
	}
	if err := db.Tx(ctx, func(tx *Tx) error { _, err := tx.Enqueue(ctx, "commit", "s", 1, "local"); return err }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state string
		want  bool
	}{{JobPending, true}, {JobLeased, true}, {JobParked, false}, {JobDone, false}} {
		if err := db.Tx(ctx, func(tx *Tx) error {
			j, err := tx.Job(ctx, 1)
			if err != nil {
				return err
			}
			j.State, j.NextAttemptAt = c.state, time.Now().Add(time.Hour)
			return tx.UpdateJob(ctx, j)
		}); err != nil {
			t.Fatal(err)
		}
		if got := waiting(); got != c.want {
			t.Errorf("a %s job: waiting %v, want %v", c.state, got, c.want)
		}
	}
}
