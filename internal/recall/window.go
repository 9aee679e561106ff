package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"cx/internal/fsutil"
	"cx/internal/ledger"
	"cx/internal/rollout"
	"cx/internal/words"
)

// A Window is per-prompt recall's view of a project: its latest
// WindowTurns turns, each with the terms it holds (internal/words, as the
// index has them), its length and the text an item of it gives. It is
// kept as a file under CX_HOME/recall, so a prompt reads one file instead
// of opening the ledger and walking the index's word lists (a prompt's
// answer must stay within 1.2× of the hook without recall). The file
// names the index state it was read at (ledger.WindowStamp); whoever finds
// it stale or missing reads it again from the ledger and writes it.
//
// The file, little endian:
//
//	header  magic, stamp (last, epoch: int64), turns, terms (uint32)
//	turns   id, at (unix ns): int64; generation, turn, chars, session,
//	        session length, body, body length: uint32  (44 bytes each)
//	terms   text, text length, postings, postings length: uint32,
//	        sorted by text  (16 bytes each)
//	postings  uint16 turn numbers, ascending, for each term
//	strings   the sessions', bodies' and terms' bytes
type Window struct {
	stamp  ledger.WindowStamp
	nTurns int
	// sessions is how many sessions the turns are of (0 until ordinary
	// counts them).
	sessions int
	turns    []byte // the turn records
	terms    []byte // the term records
	post     []byte
	str      []byte
}

const (
	windowMagic   = "cxwin01\n"
	windowHeader  = len(windowMagic) + 8 + 8 + 4 + 4
	windowTurnLen = 44
	windowTermLen = 16
	// maxWindowTurns is what a posting (uint16) can number.
	maxWindowTurns = 1 << 16
)

// WindowTurn is one turn of a window.
type WindowTurn struct {
	ledger.RecallHit // ID, SessionID, Generation, Turn, At, Chars
	Body             string
}

// windowDir holds the windows under cx's home.
func windowDir(home string) string { return filepath.Join(home, "recall") }

// WindowPath is project's window file ("" is every project's).
func WindowPath(home, project string) string {
	name := project
	if name == "" {
		name = "all"
	}
	// A project id is a short hash; anything else is kept to a file name.
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, name)
	return filepath.Join(windowDir(home), name+".window")
}

// DropWindows removes every window file (forget does, so what it removes
// is gone from them too; they are read again from the ledger).
func DropWindows(home string) error {
	paths, _ := filepath.Glob(filepath.Join(windowDir(home), "*.window"))
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RefreshWindows reads again, from db, each window file the index has
// moved on from (a session archived since): the background sweep does it
// after its commits, so the next prompt finds its window current and need
// not read it itself. A window file cx cannot read is removed.
func RefreshWindows(ctx context.Context, db *ledger.DB, home string) error {
	paths, _ := filepath.Glob(filepath.Join(windowDir(home), "*.window"))
	var errs []error
	for _, p := range paths {
		project := strings.TrimSuffix(filepath.Base(p), ".window")
		if project == "all" {
			project = ""
		}
		if WindowPath(home, project) != p {
			continue // not a name cx gives a window
		}
		w := LoadWindow(home, project)
		now, err := db.RecallWindowStamp(ctx, project)
		if err != nil {
			return err
		}
		if w != nil && w.Stamp() == now {
			continue
		}
		if _, err := ReadWindow(ctx, db, home, project, w); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// windowEntry is a turn as its window holds it: where it is, its
// item's text and its terms (sorted, each once).
type windowEntry struct {
	ledger.RecallHit
	body  string
	terms []string
}

// entryOf is a turn read from the ledger as its window holds it.
func entryOf(t ledger.WindowTurn) windowEntry {
	var terms []string
	for _, f := range []string{t.Text.Prompt, t.Text.Reply, t.Text.Commands, t.Text.Files} {
		terms = words.Terms(terms, f)
	}
	slices.Sort(terms)
	return windowEntry{RecallHit: t.RecallHit, body: ItemBody(t.Text), terms: slices.Compact(terms)}
}

// entries are the window's turns as encodeWindow takes them: each turn's
// terms from the postings, so a window moves on by the turns added since
// without its older turns read and split into words again.
func (w *Window) entries() []windowEntry {
	defer runtime.KeepAlive(w)
	out := make([]windowEntry, w.nTurns)
	for i := range out {
		t := w.Turn(i)
		out[i] = windowEntry{RecallHit: t.RecallHit, body: t.Body}
	}
	le := binary.LittleEndian
	for i := 0; i < len(w.terms)/windowTermLen; i++ {
		r := w.terms[i*windowTermLen:]
		off, n := le.Uint32(r), le.Uint32(r[4:])
		term := string(w.str[off : off+n])
		p, cnt := int(le.Uint32(r[8:])), int(le.Uint32(r[12:]))
		for k := p; k < p+cnt; k++ {
			if i := int(le.Uint16(w.post[2*k:])); i < len(out) { // a damaged posting is dropped (decodeWindow)
				out[i].terms = append(out[i].terms, term) // the terms are sorted: so is each turn's list
			}
		}
	}
	return out
}

// encodeWindow writes turns (oldest first) as a window file.
func encodeWindow(stamp ledger.WindowStamp, turns []windowEntry) []byte {
	turns = turns[max(0, len(turns)-maxWindowTurns):]
	var str bytes.Buffer
	addStr := func(s string) (uint32, uint32) {
		off := str.Len()
		str.WriteString(s)
		return uint32(off), uint32(len(s))
	}
	holders := map[string][]uint16{}
	rec := make([]byte, 0, len(turns)*windowTurnLen)
	for i, t := range turns {
		so, sl := addStr(t.SessionID)
		bo, bl := addStr(t.body)
		rec = binary.LittleEndian.AppendUint64(rec, uint64(t.ID))
		rec = binary.LittleEndian.AppendUint64(rec, uint64(t.At.UnixNano()))
		for _, v := range []uint32{uint32(t.Generation), uint32(t.Turn), uint32(t.Chars), so, sl, bo, bl} {
			rec = binary.LittleEndian.AppendUint32(rec, v)
		}
		for _, term := range t.terms {
			holders[term] = append(holders[term], uint16(i))
		}
	}
	terms := make([]string, 0, len(holders))
	for term := range holders {
		terms = append(terms, term)
	}
	slices.Sort(terms)
	var termRecs, post []byte
	for _, term := range terms {
		to, tl := addStr(term)
		ids := holders[term]
		for _, v := range []uint32{to, tl, uint32(len(post) / 2), uint32(len(ids))} {
			termRecs = binary.LittleEndian.AppendUint32(termRecs, v)
		}
		for _, id := range ids {
			post = binary.LittleEndian.AppendUint16(post, id)
		}
	}
	out := make([]byte, 0, windowHeader+len(rec)+len(termRecs)+len(post)+str.Len())
	out = append(out, windowMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(stamp.Last))
	out = binary.LittleEndian.AppendUint64(out, uint64(stamp.Epoch))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(turns)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(terms)))
	out = append(out, rec...)
	out = append(out, termRecs...)
	out = append(out, post...)
	return append(out, str.Bytes()...)
}

// errWindow is a window file cx cannot read: it is read again from the
// ledger.
var errWindow = errors.New("unreadable recall window")

// decodeWindow reads a window file, checking every offset it holds
// points inside it (a damaged file is refused, never trusted) — but for
// the postings' turn numbers, the file's largest part: a reader checks
// those it reads (Holding) and drops one past the turns, so a prompt
// touches only the postings of its own words (LoadWindow).
func decodeWindow(data []byte) (*Window, error) {
	if len(data) < windowHeader || string(data[:len(windowMagic)]) != windowMagic {
		return nil, errWindow
	}
	le := binary.LittleEndian
	h := data[len(windowMagic):]
	w := &Window{stamp: ledger.WindowStamp{Last: int64(le.Uint64(h)), Epoch: int64(le.Uint64(h[8:]))}}
	nTurns, nTerms := int(le.Uint32(h[16:])), int(le.Uint32(h[20:]))
	rest := data[windowHeader:]
	if nTurns > maxWindowTurns || nTurns*windowTurnLen+nTerms*windowTermLen > len(rest) {
		return nil, errWindow
	}
	w.nTurns = nTurns
	w.turns, rest = rest[:nTurns*windowTurnLen], rest[nTurns*windowTurnLen:]
	w.terms, rest = rest[:nTerms*windowTermLen], rest[nTerms*windowTermLen:]
	var nPost int
	for i := 0; i < nTerms; i++ {
		r := w.terms[i*windowTermLen:]
		if int(le.Uint32(r[8:])) != nPost {
			return nil, errWindow
		}
		nPost += int(le.Uint32(r[12:]))
	}
	if 2*nPost > len(rest) {
		return nil, errWindow
	}
	w.post, w.str = rest[:2*nPost], rest[2*nPost:]
	inStr := func(off, n uint32) bool { return uint64(off)+uint64(n) <= uint64(len(w.str)) }
	for i := 0; i < nTerms; i++ {
		r := w.terms[i*windowTermLen:]
		if !inStr(le.Uint32(r), le.Uint32(r[4:])) {
			return nil, errWindow
		}
	}
	for i := 0; i < nTurns; i++ {
		r := w.turns[i*windowTurnLen+16:]
		if !inStr(le.Uint32(r[12:]), le.Uint32(r[16:])) || !inStr(le.Uint32(r[20:]), le.Uint32(r[24:])) {
			return nil, errWindow
		}
	}
	return w, nil
}

// Len is how many turns the window holds.
func (w *Window) Len() int { return w.nTurns }

// Stamp is the index state the window was read at.
func (w *Window) Stamp() ledger.WindowStamp { return w.stamp }

// Whole reports whether the window holds every turn of its project (as of
// its stamp): it holds the latest WindowTurns, so fewer are all of them.
func (w *Window) Whole() bool { return w.nTurns < WindowTurns }

// ID is turn i's index row, read without the rest of the turn.
func (w *Window) ID(i int) int64 {
	defer runtime.KeepAlive(w)
	return int64(binary.LittleEndian.Uint64(w.turns[i*windowTurnLen:]))
}

// Chars is turn i's indexed length in characters, read without the rest
// of the turn.
func (w *Window) Chars(i int) int {
	defer runtime.KeepAlive(w)
	return int(binary.LittleEndian.Uint32(w.turns[i*windowTurnLen+24:]))
}

// Turn is the window's turn i.
func (w *Window) Turn(i int) WindowTurn {
	defer runtime.KeepAlive(w) // its bytes may be a mapping, released with w
	le := binary.LittleEndian
	r := w.turns[i*windowTurnLen:]
	str := func(off, n uint32) string { return string(w.str[off : off+n]) }
	var t WindowTurn
	t.ID, t.At = int64(le.Uint64(r)), time.Unix(0, int64(le.Uint64(r[8:]))).UTC()
	t.Generation, t.Turn, t.Chars = int(le.Uint32(r[16:])), int(le.Uint32(r[20:])), int(le.Uint32(r[24:]))
	t.SessionID, t.Body = str(le.Uint32(r[28:]), le.Uint32(r[32:])), str(le.Uint32(r[36:]), le.Uint32(r[40:]))
	return t
}

// At is turn i's time, read without the rest of the turn.
func (w *Window) At(i int) time.Time {
	defer runtime.KeepAlive(w)
	return time.Unix(0, int64(binary.LittleEndian.Uint64(w.turns[i*windowTurnLen+8:]))).UTC()
}

// SessionIs reports whether turn i is of session id, read without the
// rest of the turn.
func (w *Window) SessionIs(i int, id string) bool {
	defer runtime.KeepAlive(w)
	return string(w.session(i)) == id
}

// session is turn i's session's bytes, for a method of w's only: they may
// be a mapping's, released with w (a caller holds w alive while it reads
// them: runtime.KeepAlive).
func (w *Window) session(i int) []byte {
	r := w.turns[i*windowTurnLen+28:]
	off := binary.LittleEndian.Uint32(r)
	return w.str[off : off+binary.LittleEndian.Uint32(r[4:])]
}

// holding is the turns that hold term (ascending): binary search over the
// sorted terms.
func (w *Window) Holding(term string) []uint16 {
	defer runtime.KeepAlive(w)
	le := binary.LittleEndian
	text := func(i int) []byte {
		r := w.terms[i*windowTermLen:]
		off := le.Uint32(r)
		return w.str[off : off+le.Uint32(r[4:])]
	}
	// Compared as string(text(i)), which does not copy the bytes (a
	// prompt's near words look up hundreds of terms).
	n := len(w.terms) / windowTermLen
	i := sort.Search(n, func(i int) bool { return string(text(i)) >= term })
	if i == n || string(text(i)) != term {
		return nil
	}
	r := w.terms[i*windowTermLen:]
	p, cnt := int(le.Uint32(r[8:])), int(le.Uint32(r[12:]))
	out := make([]uint16, 0, cnt)
	for k := p; k < p+cnt; k++ {
		if t := le.Uint16(w.post[2*k:]); int(t) < w.nTurns { // decodeWindow left it to here
			out = append(out, t)
		}
	}
	return out
}

// holdingAll is the turns that hold every one of terms (a phrase's words:
// a turn that holds them all is taken to hold the phrase).
func (w *Window) HoldingAll(terms []string) []uint16 {
	if len(terms) == 0 {
		return nil
	}
	out := w.Holding(terms[0])
	for _, t := range terms[1:] {
		if len(out) == 0 {
			break
		}
		other := w.Holding(t)
		kept := out[:0]
		for _, x := range out {
			if _, ok := slices.BinarySearch(other, x); ok {
				kept = append(kept, x)
			}
		}
		out = kept
	}
	return out
}

// LoadWindow reads project's window file; nil when there is none or it
// cannot be read. The file is mapped, not read: a prompt touches the
// pages of its own words' postings and of its candidates, not the whole
// file (a full window of coding turns is 1.4 MB: read and checked whole,
// 1.7-2.1 ms of every prompt; mapped, 0.1 ms: BenchmarkLoadWindow).
// Window files are only ever replaced by a rename, which leaves a mapping
// as it was; it is released once the Window is no longer used.
func LoadWindow(home, project string) *Window {
	data, unmap, err := fsutil.MapFile(WindowPath(home, project))
	if err != nil {
		return nil
	}
	w, err := decodeWindow(data)
	if err != nil {
		unmap()
		return nil
	}
	runtime.AddCleanup(w, func(unmap func()) { unmap() }, unmap)
	return w
}

// ReadWindow reads project's window from the ledger and writes its file
// (when CX_HOME can be written; the window is used either way). Given the
// window as it was (old, nil for none) and no index row removed since, it
// reads only the turns added after it: a commit moves a window on at the
// cost of its own turns, not of the project's latest thousand. After
// writing, the stamp is read again: a forget that committed meanwhile
// removed the files before this one was written, so this one goes too.
func ReadWindow(ctx context.Context, db *ledger.DB, home, project string, old *Window) (*Window, error) {
	var after int64
	if old != nil {
		after = old.stamp.Last
	}
	stamp, turns, err := db.RecallWindowTurns(ctx, project, after, WindowTurns)
	var entries []windowEntry
	switch {
	case err != nil:
	case old == nil:
	case stamp.Epoch == old.stamp.Epoch && stamp.Last >= old.stamp.Last:
		entries = old.entries()
	default: // rows removed since (a session forgotten, a generation indexed again)
		stamp, turns, err = db.RecallWindowTurns(ctx, project, 0, WindowTurns)
	}
	if err != nil {
		return nil, fmt.Errorf("read recall window: %w", err)
	}
	for _, t := range turns {
		entries = append(entries, entryOf(t))
	}
	data := encodeWindow(stamp, entries[max(0, len(entries)-WindowTurns):])
	w, err := decodeWindow(data)
	if err != nil {
		return nil, fmt.Errorf("recall window: %w", err)
	}
	path := WindowPath(home, project)
	if stamp.Last == 0 {
		return w, nil // no turn: nothing worth a file (and a ledger not there yet is not written beside)
	}
	if os.MkdirAll(filepath.Dir(path), 0o700) == nil && fsutil.WriteReplace(path, data, 0o600) == nil {
		if now, err := db.RecallWindowStamp(ctx, project); err != nil || now.Epoch != stamp.Epoch {
			os.Remove(path)
		}
	}
	return w, nil
}

// ItemBody is what a recalled turn holds, as the model reads it: what was
// asked, answered and done, one line each, at most MaxItemChars.
func ItemBody(t ledger.RecallText) string {
	body := "› " + rollout.OneLine(t.Prompt, 300)
	if t.Reply != "" {
		body += "\n‹ " + rollout.OneLine(t.Reply, 300)
	}
	for _, c := range strings.Split(strings.TrimSpace(t.Commands), "\n") {
		switch {
		case strings.HasPrefix(c, ToolMark):
			body += "\n" + rollout.OneLine(c, 160)
		case c != "":
			body += "\n$ " + rollout.OneLine(c, 120)
		}
	}
	if f := strings.Join(strings.Fields(t.Files), ", "); f != "" {
		body += "\nfiles: " + rollout.OneLine(f, 160)
	}
	if utf8.RuneCountInString(body) > MaxItemChars {
		body = string([]rune(body)[:MaxItemChars-1]) + "…"
	}
	return body
}

// ToolMark begins a line of the commands field that says what a tool
// (not a shell) did: views show it as it is, a command after "$ ".
const ToolMark = "• "

// NextShare is the share of a turn's score the turn after it gets.
const NextShare = 0.5

const (
	// MaxItemChars bounds what one item holds, its heading aside (as the
	// OpenViking plugin bounds its items).
	MaxItemChars = 500
	// WindowTurns is how many of the project's latest turns per-prompt
	// recall searches, its words weighed by their rarity there: its cost on every prompt stays flat however large
	// the archive grows (`cx ctl search` searches it all).
	WindowTurns = 1000
)

// WindowOf is the window of turns (oldest first) as its file would hold
// it, without a file (tests and benchmarks).
func WindowOf(stamp ledger.WindowStamp, turns []ledger.WindowTurn) (*Window, error) {
	entries := make([]windowEntry, len(turns))
	for i, t := range turns {
		entries[i] = entryOf(t)
	}
	return decodeWindow(encodeWindow(stamp, entries))
}

// IndexOf is the window's index of the turn whose index row is id; -1
// when the window does not hold it (the window's turns are in the
// index's order).
func (w *Window) IndexOf(id int64) int {
	defer runtime.KeepAlive(w)
	le := binary.LittleEndian
	i := sort.Search(w.nTurns, func(i int) bool { return int64(le.Uint64(w.turns[i*windowTurnLen:])) >= id })
	if i < w.nTurns && int64(le.Uint64(w.turns[i*windowTurnLen:])) == id {
		return i
	}
	return -1
}

// NextToOneOf reports whether a turn next to window turn i in its session
// is one of holders (ascending): a passage holds what the turn next to
// it does.
func (w *Window) NextToOneOf(i int, holders []uint16) bool {
	for _, n := range []int{i - 1, i + 1} {
		if n < 0 || n >= w.nTurns {
			continue
		}
		if _, ok := slices.BinarySearch(holders, uint16(n)); ok && w.Neighbours(i, n) {
			return true
		}
	}
	return false
}
