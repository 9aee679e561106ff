// Package search is recall's read side for a person or a model: a search
// of the archive (a question ranked, or FTS5 syntax run as typed), one
// archived turn and one archived session shown whole but bounded — what
// `cx ctl search`, `cx ctl show` and `cx mcp` share. It reads the index
// internal/recall/index writes, never writing it.
package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/rollout"
	"cx/internal/words"
)

// Archive is the ledger opened for recall's reading.
type Archive struct {
	db       *ledger.DB
	projects *recall.Projects
}

// NewArchive is recall over db, the ledger an entry point opened (to
// read: search never writes it), and the projects of CX_HOME home.
func NewArchive(db *ledger.DB, home string) *Archive {
	return &Archive{db: db, projects: recall.NewProjects(home)}
}

// Knows reports whether the archive holds a turn of dir's project (one
// whose directory may be gone since).
func (a *Archive) Knows(ctx context.Context, dir string) bool {
	st, err := a.db.RecallWindowStamp(ctx, a.projects.Of(dir))
	return err == nil && st.Last > 0
}

// Query is one search.
type Query struct {
	Text    string
	Project string // a directory whose project to search; "" for every project
	Since   time.Time
	Limit   int
}

// Hit is one turn a search found.
type Hit struct {
	Session    string `json:"session"`
	Generation int    `json:"generation"`
	Turn       int    `json:"turn"`
	Time       string `json:"time"`
	Cwd        string `json:"cwd"`
	Snippet    string `json:"snippet"`
	More       string `json:"more"`
	// Turns is the passage the hit stands for, its own turn first: the
	// hits next to it in its session (fold), then a neighbouring turn that
	// holds a word of the question — a conversation's answer is often the
	// turn around the one that matched. Natural-language queries only.
	Turns []int `json:"turns,omitempty"`
}

// SearchResult is a search as `cx ctl search` prints it.
type SearchResult struct { // fields in the order the command always printed them
	Hits    []Hit  `json:"hits"`
	Project string `json:"project"`
	Query   string `json:"query"`
}

// WriteText is the search for a terminal.
func (r SearchResult) WriteText(w io.Writer) {
	fmt.Fprint(w, HitsText(r.Query, r.Hits))
	if len(r.Hits) == 0 && r.Project != "" {
		fmt.Fprintln(w, "(this project only; --all searches every project)")
	}
}

// ErrQuery is a query cx will not run: empty, too long, or one the index
// cannot parse.
var ErrQuery = recall.ErrQuery

// Search finds archived turns, best first.
func (a *Archive) Search(ctx context.Context, q Query) ([]Hit, error) {
	pq, err := recall.ParseQuestion(q.Text)
	if err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	rq := ledger.RecallQuery{Match: pq.Expr, Since: q.Since, Limit: q.Limit}
	if q.Project != "" {
		rq.Project = a.projects.Of(q.Project)
	}
	found, around, err := a.ranked(ctx, pq, rq)
	if errors.Is(err, ledger.ErrQuery) {
		why := strings.TrimSpace(strings.TrimPrefix(err.Error(), ledger.ErrQuery.Error()+":"))
		if why == "" || why == ledger.ErrQuery.Error() {
			why = "the index cannot read it as a search"
		}
		return nil, fmt.Errorf("%w %q: %s (search for words; put words with other characters in double quotes)", ErrQuery, rollout.OneLine(q.Text, 60), why)
	}
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if pq.Natural {
		if err = a.passages(ctx, pq, found, around); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}
	hits := make([]Hit, 0, len(found))
	for _, h := range found {
		hits = append(hits, Hit{Session: h.SessionID, Generation: h.Generation, Turn: h.Turn, Time: h.At.Format(time.RFC3339),
			Cwd: h.Cwd, Snippet: rollout.OneLine(h.Snippet, 400), More: fmt.Sprintf("cx ctl show %s --turn %d", h.SessionID, h.Turn),
			Turns: around[place{h.SessionID, h.Turn}]})
	}
	return hits, nil
}

// passages completes the hits' passages (around: each hit's turn first,
// then the hits folded into it): the turns just before and after a
// passage in its session that hold a word of the question join it (the
// one after first), up to maxPassage turns, none a hit or in a passage
// of its own.
func (a *Archive) passages(ctx context.Context, pq recall.Question, found []ledger.RecallHit, around map[place][]int) error {
	phrases := pq.Phrases()
	want := map[string]bool{}
	for _, ph := range phrases {
		for _, t := range ph {
			want[t] = true
		}
	}
	taken := map[place]bool{}
	for _, h := range found {
		for _, t := range around[place{h.SessionID, h.Turn}] {
			taken[place{h.SessionID, t}] = true
		}
	}
	edges := func(turns []int) (int, int) { return slices.Max(turns) + 1, slices.Min(turns) - 1 }
	var places []ledger.Place
	for _, h := range found {
		after, before := edges(around[place{h.SessionID, h.Turn}])
		for _, t := range []int{after, before} {
			if t >= 1 && !taken[place{h.SessionID, t}] {
				places = append(places, ledger.Place{SessionID: h.SessionID, Turn: t})
			}
		}
	}
	near, texts, err := a.db.RecallTurnHits(ctx, places)
	if err != nil || len(near) == 0 {
		return err
	}
	starts := startsOf(phrases)
	stems := words.Stems{}
	shares := map[place]bool{}
	for _, n := range near {
		t := texts[n.ID]
		words.EachWord(t.Prompt+"\n"+t.Reply, func(w []byte, _, _ int) {
			if starts.May(w) && want[stems.Of(w)] {
				shares[place{n.SessionID, n.Turn}] = true
			}
		})
	}
	for _, h := range found {
		p := place{h.SessionID, h.Turn}
		turns := around[p]
		after, before := edges(turns)
		for _, t := range []int{after, before} {
			q := place{h.SessionID, t}
			if shares[q] && !taken[q] && len(turns) < maxPassage {
				taken[q] = true
				turns = append(turns, t)
			}
		}
		around[p] = turns
	}
	for p, turns := range around {
		if len(turns) == 1 {
			delete(around, p) // a turn alone is its hit's own
		}
	}
	return nil
}

// maxPassage bounds the turns one hit stands for.
const maxPassage = 3

// fold keeps the best limit hits, a hit next to a better one of its
// session (or to the turns folded into it) joining that one's passage
// while it has room: two turns of one exchange are one place to look, not
// two of the few a search shows (a question's hits; a one-word lookup's
// are each their own). It returns the kept hits and each one's turns, its
// own first.
func fold(found []ledger.RecallHit, limit int, join bool) ([]ledger.RecallHit, map[place][]int) {
	var kept []ledger.RecallHit
	around := map[place][]int{}
	joins := func(h ledger.RecallHit) bool { // h joins a kept hit's passage
		for _, k := range kept {
			p := place{k.SessionID, k.Turn}
			turns := around[p]
			if k.SessionID == h.SessionID && len(turns) < maxPassage && (h.Turn == slices.Max(turns)+1 || h.Turn == slices.Min(turns)-1) {
				around[p] = append(turns, h.Turn)
				return true
			}
		}
		return false
	}
	for _, h := range found {
		if join && joins(h) {
			continue
		}
		if len(kept) < limit {
			kept = append(kept, h)
			around[place{h.SessionID, h.Turn}] = []int{h.Turn}
		}
	}
	return kept, around
}

// ParseSince reads --since: a duration back from now (90m, 36h, 7d, 2w)
// or a date (2006-01-02, or RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if n, unit := strings.TrimRight(s, "dw"), strings.TrimLeft(s, "0123456789"); (unit == "d" || unit == "w") && n != "" {
		days, err := strconv.Atoi(n)
		if err == nil {
			if unit == "w" {
				days *= 7
			}
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339, time.RFC3339Nano} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (90m, 36h, 7d, 2w) or a date (2006-01-02)", s)
}

// HitsText renders search hits for a terminal or a model.
func HitsText(query string, hits []Hit) string {
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "no archived turn matches %q\n", rollout.OneLine(query, 80))
		return b.String()
	}
	for i, h := range hits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s  turn %d (g%d)  %s  %s\n  %s\n  more: %s\n", h.Session, h.Turn, h.Generation, h.Time, h.Cwd, h.Snippet, h.More)
	}
	return b.String()
}

// ranked runs a search. Plain words are ranked by bm25, and a turn gets
// half the score of the turn before it: in a conversation the answer
// follows the question (a prompt about a failure, then the turn that fixed
// it; a question, then the reply that holds what was asked), so the turn
// after a strong match is a candidate even when it shares no word with
// the query (a question's, not a single word's: that is a lookup). Its
// own words count too.
func (a *Archive) ranked(ctx context.Context, pq recall.Question, rq ledger.RecallQuery) ([]ledger.RecallHit, map[place][]int, error) {
	if !pq.Natural {
		found, err := a.db.Search(ctx, rq)
		return found, nil, err
	}
	limit := rq.Limit
	rq.Limit = max(2*limit, 10)
	rq.NoSnippets = true // made below, for the hits kept
	run, err := a.newRun(ctx, rq)
	if err != nil {
		return nil, nil, err
	}
	found, err := a.search(ctx, pq, rq, localPool, run)
	if err != nil {
		return nil, nil, err
	}
	if found, err = a.dated(ctx, pq, rq, found, run); err != nil || len(found) == 0 {
		return found, nil, err
	}
	at := placesOf(found)
	bonus := make([]float64, len(found))
	var wanted []ledger.Place
	from := map[place]ledger.RecallHit{} // a neighbour not found itself: whose next it is
	for _, h := range found {
		next := place{h.SessionID, h.Turn + 1}
		if j, ok := at[next]; ok {
			bonus[j] += recall.NextShare * h.Score
			continue
		}
		if len(pq.Terms) < 2 {
			continue // one word is a lookup: only the turns that hold it
		}
		wanted = append(wanted, ledger.Place{SessionID: next.session, Turn: next.turn})
		from[next] = h
	}
	nexts, read, err := a.db.RecallTurnHits(ctx, wanted)
	if err != nil {
		return nil, nil, err
	}
	for id, t := range read {
		run.known[id] = t // the snippets below read them
	}
	after := map[int64]int{} // a neighbour's row: the turn it follows
	for _, nh := range nexts {
		h := from[place{nh.SessionID, nh.Turn}]
		after[nh.ID] = h.Turn
		found = append(found, nh)
		bonus = append(bonus, recall.NextShare*h.Score)
	}
	for i := range found {
		found[i].Score += bonus[i]
	}
	sortHits(found)
	found, around := fold(found, limit, len(pq.Terms) >= 2)
	// The snippets, from the kept hits' text (one statement): a neighbour
	// shows where its prompt begins.
	texts, err := a.textsOf(ctx, found, run.known)
	if err != nil {
		return nil, nil, err
	}
	phrases := pq.Phrases()
	for i, h := range found {
		t := texts[h.ID]
		if prev, ok := after[h.ID]; ok {
			found[i].Snippet = fmt.Sprintf("(after turn %d) %s", prev, firstRunes(t.Prompt, 200))
			continue
		}
		found[i].Snippet = snippet([]string{t.Prompt, t.Reply, t.Commands, t.Files}, phrases)
	}
	return found, around, nil
}

// textsOf reads the indexed text of hits (one statement), those not
// already in known (a search's reads so far; nil for none), and adds
// them to it.
func (a *Archive) textsOf(ctx context.Context, hits []ledger.RecallHit, known map[int64]ledger.RecallText) (map[int64]ledger.RecallText, error) {
	if known == nil {
		known = map[int64]ledger.RecallText{}
	}
	var ids []int64
	for _, h := range hits {
		if _, ok := known[h.ID]; !ok {
			ids = append(ids, h.ID)
		}
	}
	read, err := a.db.RecallTexts(ctx, ids)
	for id, t := range read {
		known[id] = t
	}
	return known, err
}

// place is a turn of a session.
type place struct {
	session string
	turn    int
}

// placesOf indexes hits by their place.
func placesOf(hits []ledger.RecallHit) map[place]int {
	at := make(map[place]int, len(hits))
	for i, h := range hits {
		at[place{h.SessionID, h.Turn}] = i
	}
	return at
}

// firstRunes is s's first n characters.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// sortHits orders hits best first, ties to the newer.
func sortHits(found []ledger.RecallHit) {
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].Score != found[j].Score {
			return found[i].Score > found[j].Score
		}
		return found[i].At.After(found[j].At)
	})
}

// DB is the ledger the archive reads.
func (a *Archive) DB() *ledger.DB { return a.db }

// Projects are the project identities the archive names projects by.
func (a *Archive) Projects() *recall.Projects { return a.projects }
