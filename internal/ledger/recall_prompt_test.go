package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
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

func placesIn(set map[int64]bool, ids map[string]int64) []string {
	var out []string
	for place, id := range ids {
		if set[id] {
			out = append(out, place)
		}
	}
	sort.Strings(out)
	return out
}

func TestRecallWindowAndTermRows(t *testing.T) {
	db, ids := promptIndex(t)
	ctx := context.Background()
	cases := []struct {
		name, project, notSession string
		n                         int
		window                    []string
		rows                      [][]string // per match: `"parser"`, `"flaky"`
	}{
		{"a project's latest turns", "p1", "", 3, []string{"s1/3", "s3/1", "s3/2"}, [][]string{nil, {"s3/1"}}},
		{"all of a project's", "p1", "", 10, []string{"s1/1", "s1/2", "s1/3", "s3/1", "s3/2"}, [][]string{{"s1/1", "s1/2"}, {"s1/1", "s3/1"}}},
		{"but the thread's own", "p1", "s3", 10, []string{"s1/1", "s1/2", "s1/3"}, [][]string{{"s1/1", "s1/2"}, {"s1/1"}}},
		{"every project's", "", "", 4, []string{"s2/1", "s2/2", "s3/1", "s3/2"}, [][]string{{"s2/1"}, {"s2/2", "s3/1"}}},
		{"a project with none", "p9", "", 10, nil, [][]string{nil, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			window, err := db.RecallWindow(ctx, c.project, c.notSession, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if got := placesIn(window, ids); !reflect.DeepEqual(got, c.window) {
				t.Errorf("window %v, want %v", got, c.window)
			}
			rows, err := db.RecallTermRows(ctx, []string{`"parser"`, `"flaky"`}, window)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range c.rows {
				if got := placesIn(rows[i], ids); !reflect.DeepEqual(got, want) {
					t.Errorf("match %d: %v, want %v", i, got, want)
				}
			}
		})
	}
	if _, err := db.RecallTermRows(ctx, []string{`"parser" AND`}, map[int64]bool{1: true}); err == nil {
		t.Error("a match FTS5 cannot parse: no error")
	}
}

// The candidates come back in the order asked, with the turn after each
// (where there is one). A turn's length is written with it; a turn indexed
// before schema 14 has none, and its length is read from its text: the
// same figure.
func TestRecallCandidates(t *testing.T) {
	db, ids := promptIndex(t)
	ctx := context.Background()
	want := []int64{ids["s3/2"], ids["s1/1"]}
	lengths := func() []int {
		t.Helper()
		hits, nexts, err := db.RecallCandidates(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if len(nexts) != 1 || nexts[0].ID != ids["s1/2"] || nexts[0].Chars != 22 {
			t.Fatalf("nexts %+v, want s1/2 alone (s3/2 is its session's last), 22 characters", nexts)
		}
		var out []int
		for i, h := range hits {
			if h.ID != want[i] {
				t.Fatalf("hit %d is row %d, want %d (the order asked)", i, h.ID, want[i])
			}
			out = append(out, h.Chars)
		}
		return out
	}
	written := lengths()
	// "naïve café" + "ok": characters, not bytes.
	if !reflect.DeepEqual(written, []int{12, 21}) {
		t.Fatalf("lengths %v, want [12 21]", written)
	}
	if _, err := db.db.Exec(`UPDATE recall_turns SET chars = NULL`); err != nil {
		t.Fatal(err)
	}
	if read := lengths(); !reflect.DeepEqual(read, written) {
		t.Errorf("lengths read from the text %v, written %v", read, written)
	}
}

func TestWindowRanges(t *testing.T) {
	run := func(from, to int64) []int64 {
		var ids []int64
		for id := from; id <= to; id++ {
			ids = append(ids, id)
		}
		return ids
	}
	set := func(runs ...[]int64) map[int64]bool {
		m := map[int64]bool{}
		for _, r := range runs {
			for _, id := range r {
				m[id] = true
			}
		}
		return m
	}
	cases := []struct {
		name   string
		window map[int64]bool
		n      int
		want   [][2]int64
	}{
		{"none", set(), 8, nil},
		{"one run", set(run(100, 1099)), 8, [][2]int64{{100, 1099}}},
		{"narrow gaps are read through", set(run(1, 10), run(40, 50), run(100, 120)), 8, [][2]int64{{1, 120}}},
		// A project seldom used: its turns, then much of the archive, then
		// its latest session.
		{"a wide gap is left out", set(run(1, 300), run(50_000, 50_020)), 8, [][2]int64{{1, 300}, {50_000, 50_020}}},
		{"the widest gaps are left out", set(run(1, 5), run(1_000, 1_005), run(100_000, 100_005), run(101_000, 101_005)), 3,
			[][2]int64{{1, 5}, {1_000, 1_005}, {100_000, 101_005}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := windowRanges(c.window, c.n); !reflect.DeepEqual(got, c.want) {
				t.Errorf("windowRanges = %v, want %v", got, c.want)
			}
		})
	}
}
