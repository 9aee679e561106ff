package recall

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"cx/internal/ledger"
)

func windowOf(t *testing.T, turns ...string) []byte {
	t.Helper()
	var wt []windowEntry
	for i, text := range turns {
		wt = append(wt, entryOf(ledger.WindowTurn{
			RecallHit: ledger.RecallHit{ID: int64(10 + i), SessionID: "s" + string(rune('a'+i%2)), Generation: 1, Turn: i/2 + 1,
				At: time.Date(2026, 1, 2, 10, i, 0, 0, time.UTC), Chars: len(text)},
			Text: ledger.RecallText{Prompt: text, Reply: "ok"}}))
	}
	return encodeWindow(ledger.WindowStamp{Last: 42, Epoch: 3}, wt)
}

func TestWindowFile(t *testing.T) {
	data := windowOf(t, "the parser is flaky", "fixing the parser cache", "ship it", "naïve café tests")
	w, err := decodeWindow(data)
	if err != nil {
		t.Fatal(err)
	}
	if w.Stamp() != (ledger.WindowStamp{Last: 42, Epoch: 3}) || w.Len() != 4 {
		t.Fatalf("stamp %+v, %d turns", w.Stamp(), w.Len())
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
		if got := w.HoldingAll(c.terms); !slices.Equal(got, c.want) {
			t.Errorf("holding %v = %v, want %v", c.terms, got, c.want)
		}
	}
	tu := w.Turn(1)
	if tu.ID != 11 || tu.SessionID != "sb" || tu.Turn != 1 || !tu.At.Equal(time.Date(2026, 1, 2, 10, 1, 0, 0, time.UTC)) || tu.Body != "› fixing the parser cache\n‹ ok" {
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

// TestDamagedPostingIsDropped: a posting's turn number is checked where it
// is read, not as the file is decoded (LoadWindow maps the file so a
// prompt touches only its own words' postings): one past the turns is
// never followed — not by a prompt's lookup, nor by the window moving on.
func TestDamagedPostingIsDropped(t *testing.T) {
	data := windowOf(t, "the parser is flaky", "fixing the parser cache")
	w, err := decodeWindow(data)
	if err != nil {
		t.Fatal(err)
	}
	nTerms := int(binary.LittleEndian.Uint32(data[windowHeader-4:]))
	postings := windowHeader + w.Len()*windowTurnLen + nTerms*windowTermLen
	for k := 0; k < len(w.post)/2; k++ {
		binary.LittleEndian.PutUint16(data[postings+2*k:], 7) // every posting: a turn the window does not have
	}
	damaged, err := decodeWindow(data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got := damaged.HoldingAll([]string{"parser"}); len(got) != 0 {
		t.Errorf("holding parser = %v, want none", got)
	}
	for _, e := range damaged.entries() {
		if len(e.terms) != 0 {
			t.Errorf("turn %d kept terms %v from damaged postings", e.ID, e.terms)
		}
	}
}

// TestLoadedWindowsAreReleased: a window file is mapped, and the mapping
// goes with the Window (a hook host loads one per prompt).
func TestLoadedWindowsAreReleased(t *testing.T) {
	home := t.TempDir()
	path := WindowPath(home, "p")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, windowOf(t, "the parser is flaky", "fixing the parser cache"), 0o600); err != nil {
		t.Fatal(err)
	}
	mapped := func() int {
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Skip("no /proc/self/maps: the mappings cannot be counted here")
		}
		return strings.Count(string(maps), path)
	}
	for range 500 {
		w := LoadWindow(home, "p")
		if w == nil || !slices.Equal(w.Holding("parser"), []uint16{0, 1}) {
			t.Fatal("window not loaded")
		}
	}
	for range 5 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
	}
	if n := mapped(); n > 10 {
		t.Errorf("%d mappings of the window left after 500 loads", n)
	}
}
