package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// promptIndex indexes, in order, turns of two projects and three sessions:
// p1's s1 (turns 1-3), p2's s2 (1-2), p1's s3 (1-2).
func promptIndex(t *testing.T) (*DB, map[string]int64) {
	t.Helper()
	db := open(t, filepath.Join(t.TempDir(), FileName))
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	add := func(tx *Tx, sid, project string, texts ...string) error {
		var docs []RecallDoc
		for i, text := range texts {
			docs = append(docs, RecallDoc{SessionID: sid, Generation: 1, Turn: i + 1, Key: fmt.Sprint(i), At: at, Project: project, Prompt: text, Reply: "ok"})
		}
		return tx.IndexGeneration(ctx, sid, 1, docs)
	}
	err := db.Tx(ctx, func(tx *Tx) error {
		for _, err := range []error{
			add(tx, "s1", "p1", "the parser is flaky", "fix the parser cache", "ship it"),
			add(tx, "s2", "p2", "the parser of p2", "flaky elsewhere"),
			add(tx, "s3", "p1", "a flaky network test", "naïve café"),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	rows, err := db.db.Query(`SELECT id, session_id, turn FROM recall_turns`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sid string
		var turn int
		if err := rows.Scan(&id, &sid, &turn); err != nil {
			t.Fatal(err)
		}
		ids[fmt.Sprintf("%s/%d", sid, turn)] = id
	}
	return db, ids
}

func TestRecallWindowTurns(t *testing.T) {
	db, ids := promptIndex(t)
	ctx := context.Background()
	for _, c := range []struct {
		project string
		after   string // the turns after this one's row
		n       int
		want    []string
	}{
		{"p1", "", 10, []string{"s1/1", "s1/2", "s1/3", "s3/1", "s3/2"}},
		{"p1", "", 3, []string{"s1/3", "s3/1", "s3/2"}}, // the latest, oldest first
		{"", "", 2, []string{"s3/1", "s3/2"}},
		{"nothing", "", 5, nil},
		{"p1", "s1/2", 10, []string{"s1/3", "s3/1", "s3/2"}},
		{"p1", "s1/2", 2, []string{"s3/1", "s3/2"}},
		{"", "s2/2", 10, []string{"s3/1", "s3/2"}},
		{"p1", "s3/2", 10, nil},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d", c.project, c.after, c.n), func(t *testing.T) {
			stamp, turns, err := db.RecallWindowTurns(ctx, c.project, ids[c.after], c.n)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tu := range turns {
				got = append(got, fmt.Sprintf("%s/%d", tu.SessionID, tu.Turn))
				if tu.Text.Reply != "ok" || tu.Chars != len([]rune(tu.Text.Prompt))+2 || tu.ID != ids[got[len(got)-1]] {
					t.Errorf("%s: %+v", got[len(got)-1], tu)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("window = %v, want %v", got, c.want)
			}
			now, err := db.RecallWindowStamp(ctx, c.project)
			if err != nil || now != stamp {
				t.Errorf("stamp %+v, read with the window %+v (%v)", now, stamp, err)
			}
		})
	}
}

// TestWindowStampChanges: a window read before a turn is added, or before
// any row is removed (a generation indexed again, a session forgotten),
// has a stamp the index no longer has; one of another project is kept
// when a turn is added elsewhere.
func TestWindowStampChanges(t *testing.T) {
	db, _ := promptIndex(t)
	ctx := context.Background()
	stamps := func() (p1, p2 WindowStamp) {
		t.Helper()
		var err1, err2 error
		p1, err1 = db.RecallWindowStamp(ctx, "p1")
		p2, err2 = db.RecallWindowStamp(ctx, "p2")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return p1, p2
	}
	p1, p2 := stamps()
	steps := []struct {
		name      string
		do        func(tx *Tx) error
		p1Changes bool
		p2Changes bool
	}{
		{"a p1 turn added", func(tx *Tx) error {
			return tx.IndexGeneration(ctx, "s4", 1, []RecallDoc{{SessionID: "s4", Generation: 1, Turn: 1, Key: "k", At: time.Now(), Project: "p1", Prompt: "new"}})
		}, true, false},
		{"a p2 generation indexed again", func(tx *Tx) error {
			return tx.IndexGeneration(ctx, "s2", 1, []RecallDoc{{SessionID: "s2", Generation: 1, Turn: 1, Key: "k", At: time.Now(), Project: "p2", Prompt: "again"}})
		}, true, true}, // a removal stales every window: the count is one for all
		{"a p1 session forgotten", func(tx *Tx) error { _, err := tx.Forget(ctx, "s1"); return err }, true, true},
		{"a generation indexed with nothing to remove", func(tx *Tx) error {
			return tx.IndexGeneration(ctx, "s5", 1, []RecallDoc{{SessionID: "s5", Generation: 1, Turn: 1, Key: "k", At: time.Now(), Project: "p2", Prompt: "more"}})
		}, false, true},
	}
	for _, s := range steps {
		if err := db.Tx(ctx, s.do); err != nil {
			t.Fatal(s.name, err)
		}
		n1, n2 := stamps()
		if (n1 != p1) != s.p1Changes || (n2 != p2) != s.p2Changes {
			t.Errorf("%s: p1 %+v → %+v, p2 %+v → %+v; want changes %v, %v", s.name, p1, n1, p2, n2, s.p1Changes, s.p2Changes)
		}
		p1, p2 = n1, n2
	}
}

// TestIndexMerges: sessions indexed one transaction each leave a segment
// each, up to FTS5's own merging; MergeRecall merges them down to a few,
// OptimizeRecall to one, and searches find the same turns throughout.
func TestIndexMerges(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), FileName))
	ctx := context.Background()
	segments := func() int {
		t.Helper()
		var n int
		if err := db.db.QueryRow(`SELECT count(DISTINCT segid) FROM recall_words_idx`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	found := func() int {
		t.Helper()
		hits, err := db.Search(ctx, RecallQuery{Match: `"walrus"`, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	for i := range 40 {
		sid := fmt.Sprintf("s%d", i)
		if err := db.Tx(ctx, func(tx *Tx) error {
			return tx.IndexGeneration(ctx, sid, 1, []RecallDoc{{SessionID: sid, Generation: 1, Turn: 1, Key: "k", At: time.Now(), Project: "p",
				Prompt: fmt.Sprintf("the walrus number %d", i)}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	grown := segments()
	if grown < 6 || found() != 40 {
		t.Fatalf("after 40 transactions: %d segments, %d found", grown, found())
	}
	if err := db.MergeRecall(ctx); err != nil {
		t.Fatal(err)
	}
	if n := segments(); n > 3 || found() != 40 {
		t.Errorf("after MergeRecall: %d segments (from %d), %d found", n, grown, found())
	}
	if err := db.OptimizeRecall(ctx); err != nil {
		t.Fatal(err)
	}
	if n := segments(); n != 1 || found() != 40 {
		t.Errorf("after OptimizeRecall: %d segments, %d found", n, found())
	}
}

// TestTurnsComeWithTheirTexts: the turns at places, or of rows, come with
// their texts, from whichever index table holds each (a schema-8 row not
// yet moved too); a place or row no turn is at is left out.
func TestTurnsComeWithTheirTexts(t *testing.T) {
	ctx := context.Background()
	check := func(db *DB, ids map[string]int64, when string) {
		t.Helper()
		want := map[int64]RecallText{
			ids["s1/2"]: {Prompt: "fix the parser cache", Reply: "ok"},
			ids["s3/1"]: {Prompt: "a flaky network test", Reply: "ok"},
		}
		byPlace := func() ([]RecallHit, map[int64]RecallText, error) {
			return db.RecallTurnHits(ctx, []Place{{"s1", 2}, {"s3", 1}, {"s1", 9}})
		}
		byID := func() ([]RecallHit, map[int64]RecallText, error) {
			return db.RecallTurnsByID(ctx, []int64{ids["s3/1"], ids["s1/2"], 999})
		}
		for name, read := range map[string]func() ([]RecallHit, map[int64]RecallText, error){"places": byPlace, "rows": byID} {
			hits, texts, err := read()
			if err != nil {
				t.Fatalf("%s, by %s: %v", when, name, err)
			}
			got := map[int64]RecallText{}
			for _, h := range hits {
				if fmt.Sprintf("%s/%d", h.SessionID, h.Turn) == "s1/2" && (h.Project != "p1" || h.Key != "1" || h.At.IsZero()) {
					t.Errorf("%s, by %s: hit %+v", when, name, h)
				}
				got[h.ID] = texts[h.ID]
			}
			if !reflect.DeepEqual(got, want) || len(texts) != len(want) {
				t.Errorf("%s, by %s: texts %v, want %v", when, name, texts, want)
			}
		}
	}
	db, ids := promptIndex(t)
	check(db, ids, "stemmed index")
	if hits, texts, err := db.RecallTurnHits(ctx, nil); hits != nil || texts != nil || err != nil {
		t.Errorf("no places: %v %v %v", hits, texts, err)
	}
	if hits, texts, err := db.RecallTurnsByID(ctx, nil); hits != nil || texts != nil || err != nil {
		t.Errorf("no rows: %v %v %v", hits, texts, err)
	}
	// s1/2's row back in the schema-8 table, its move pending.
	db, ids = promptIndex(t)
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO recall_text (rowid, prompt, reply, commands, files) SELECT rowid, prompt, reply, commands, files FROM recall_words WHERE rowid = %d`, ids["s1/2"]),
		fmt.Sprintf(`DELETE FROM recall_words WHERE rowid = %d`, ids["s1/2"]),
		`INSERT INTO meta (key, value) VALUES ('` + RecallReindexKey + `', 'pending')`,
	} {
		if _, err := db.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	check(db, ids, "reindex pending")
}

// A window is read while another connection holds the ledger's write
// lock (a hook's transaction in another process): its read transaction
// takes no write lock, so it neither waits nor fails. Its statements are
// kept from the second read on, and the third reads the same.
func TestRecallWindowTurnsBesideAWriter(t *testing.T) {
	db, _ := promptIndex(t)
	other := open(t, db.Path)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- other.Tx(ctx, func(tx *Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	var got [][]WindowTurn
	for range 3 {
		start := time.Now()
		_, turns, err := db.RecallWindowTurns(ctx, "p1", 0, 10)
		if err != nil || time.Since(start) > time.Second {
			t.Fatalf("window read beside a writer: %v after %v", err, time.Since(start))
		}
		got = append(got, turns)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 5 || !reflect.DeepEqual(got[0], got[2]) {
		t.Fatalf("reads differ or are short: %d turns, then %d", len(got[0]), len(got[2]))
	}
	db.stmts.mu.Lock()
	kept := len(db.stmts.stmts)
	db.stmts.mu.Unlock()
	if kept == 0 {
		t.Fatal("no statement of the window's reads was kept")
	}
}
