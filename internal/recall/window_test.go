package recall

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cx/internal/ledger"
	"cx/internal/rollout"
)

func windowOf(t *testing.T, turns ...string) []byte {
	t.Helper()
	var wt []ledger.WindowTurn
	for i, text := range turns {
		wt = append(wt, ledger.WindowTurn{
			RecallHit: ledger.RecallHit{ID: int64(10 + i), SessionID: "s" + string(rune('a'+i%2)), Generation: 1, Turn: i/2 + 1,
				At: time.Date(2026, 1, 2, 10, i, 0, 0, time.UTC), Chars: len(text)},
			Text: ledger.RecallText{Prompt: text, Reply: "ok"}})
	}
	return encodeWindow(ledger.WindowStamp{Last: 42, Epoch: 3}, wt)
}

func TestWindowFile(t *testing.T) {
	data := windowOf(t, "the parser is flaky", "fixing the parser cache", "ship it", "naïve café tests")
	w, err := decodeWindow(data)
	if err != nil {
		t.Fatal(err)
	}
	if w.stamp != (ledger.WindowStamp{Last: 42, Epoch: 3}) || w.nTurns != 4 {
		t.Fatalf("stamp %+v, %d turns", w.stamp, w.nTurns)
	}
	for _, c := range []struct {
		terms []string
		want  []uint16
	}{
		{[]string{"parser"}, []uint16{0, 1}},
		{[]string{"fix"}, []uint16{1}},         // "fixing", stemmed as the index does
		{[]string{"cafe"}, []uint16{3}},        // "café", folded
		{[]string{"ok"}, []uint16{0, 1, 2, 3}}, // every reply
		{[]string{"parser", "cach"}, []uint16{1}},
		{[]string{"parser", "ship"}, nil},
		{[]string{"zebra"}, nil},
		{nil, nil},
	} {
		if got := w.holdingAll(c.terms); !slices.Equal(got, c.want) {
			t.Errorf("holding %v = %v, want %v", c.terms, got, c.want)
		}
	}
	tu := w.turn(1)
	if tu.ID != 11 || tu.SessionID != "sb" || tu.Turn != 1 || !tu.At.Equal(time.Date(2026, 1, 2, 10, 1, 0, 0, time.UTC)) || tu.body != "› fixing the parser cache\n‹ ok" {
		t.Errorf("turn 1 = %+v", tu)
	}
}

// TestDamagedWindowIsRefused: a window file cut short, or with an offset
// that points outside it, is refused, never read past its end.
func TestDamagedWindowIsRefused(t *testing.T) {
	good := windowOf(t, "the parser is flaky", "fixing the parser cache")
	set := func(at int, v uint32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	turns := windowHeader
	terms := turns + 2*windowTurnLen
	for name, data := range map[string][]byte{
		"empty":                 nil,
		"another format":        append([]byte("cxwin99\n"), good[8:]...),
		"cut short":             good[:len(good)-3],
		"cut in the records":    good[:terms+5],
		"too many turns":        set(windowHeader-8, 1<<20),
		"too many terms":        set(windowHeader-4, 1<<20),
		"a session outside":     set(turns+28, 1<<30),
		"a body too long":       set(turns+40, 1<<30),
		"a term outside":        set(terms, 1<<30),
		"postings out of order": set(terms+8, 7),
	} {
		if _, err := decodeWindow(data); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestWindowFollowsTheIndex: recall writes its window file on first use,
// reads it after, and reads the window again when the index moved on (a
// session archived since, one forgotten) or the file is damaged — each
// time giving what the index holds.
func TestWindowFollowsTheIndex(t *testing.T) {
	a, home := testArchive(t)
	ctx := context.Background()
	proj := t.TempDir()
	archive(t, a, "s1", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "why does the walrus migration fail?", Assistant: []string{"the walrus table lacks an index"}}})
	ask := func(prompt string) []string {
		t.Helper()
		items, err := a.Recall(ctx, PromptRequest{Prompt: prompt, Project: proj})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Session)
		}
		return got
	}
	path := windowPath(home, a.projects.Of(proj))
	if got := ask("walrus migration failing"); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("first: %v", got)
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no window file after the first prompt: %v", err)
	}
	archive(t, a, "s2", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-03T10:00:00Z", User: "the narwhal deploy broke", Assistant: []string{"rolled the narwhal deploy back"}}})
	if got := ask("narwhal deploy"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("after a session was archived: %v", got)
	}
	if now, _ := os.ReadFile(path); string(now) == string(first) {
		t.Error("the window file was not written again")
	}
	// A session archived since: the sweep's refresh reads the window again.
	archive(t, a, "s3", 1, proj, []rollout.Turn{{Key: "t1", Time: "2026-01-04T10:00:00Z", User: "the okapi cache", Assistant: []string{"okapi cache cleared"}}})
	before, _ := os.ReadFile(path)
	if err := RefreshWindows(ctx, a.db, home); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if string(before) == string(after) || !strings.Contains(string(after), "okapi") {
		t.Error("RefreshWindows left a stale window")
	}
	written, _ := os.Stat(path)
	if err := RefreshWindows(ctx, a.db, home); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(path); !os.SameFile(written, again) {
		t.Error("RefreshWindows wrote a current window again") // a write replaces the file (fsutil.WriteAtomic)
	}
	os.WriteFile(path, []byte("cxwin01\ngarbage"), 0o600)
	if got := ask("narwhal deploy"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("with a damaged file: %v", got)
	}
	if err := a.db.Tx(ctx, func(tx *ledger.Tx) error { _, err := tx.Forget(ctx, "s2"); return err }); err != nil {
		t.Fatal(err)
	}
	if got := ask("narwhal deploy"); got != nil {
		t.Errorf("after forget: %v", got)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "narwhal") {
		t.Error("the window file still holds the forgotten session")
	}
	if err := DropWindows(home); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(home, "recall", "*")); len(left) != 0 {
		t.Errorf("DropWindows left %v", left)
	}
}
