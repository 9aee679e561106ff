// Package prompt is per-prompt recall: for a prompt the user just typed,
// the few archived turns of the project's other sessions that answer it
// (and a remote memory's, merged), within a budget, above a floor that
// keeps it quiet when nothing is relevant — what UserPromptSubmit gives
// the model. It ranks the project's window (internal/recall) without the
// index's bm25, so its cost stays flat however large the archive grows.
package prompt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/nearwords"
	"cx/internal/recall"
	"cx/internal/rollout"
	"cx/internal/words"
)

// Per-prompt recall: for a prompt the user just typed, the few archived
// turns of the project's other sessions that answer it, each with where it
// came from, within a character budget, above a floor that keeps it quiet
// when nothing is relevant.
//
// The floor is on a score that does not depend on the archive's size: the
// share of the prompt's information a turn holds — each term weighed by
// its rarity in the archive (bm25's idf), the weights of the terms the turn
// holds over those of all the prompt's terms. A prompt about something
// the history never spoke of has terms no turn holds, and scores low
// everywhere.

// Request is one prompt to recall for.
type Request struct {
	Prompt  string
	Project string // the directory whose project's history to recall from; "" for every project
	// Session is the thread the prompt is for: its own turns are never
	// given (it holds them), nor turns given to it before.
	Session  string
	Budget   int     // characters of item text in all (default DefaultBudget)
	MinScore float64 // the floor (default DefaultMinScore)
	// Near: a word near one of the prompt's in meaning counts for a share
	// of it (internal/nearwords; `[recall] dense`).
	Near bool
	// Remote, when set, is asked too, for at most RemoteWait (default
	// DefaultRemoteWait).
	Remote     Remote
	RemoteWait time.Duration
}

// Item is one recalled turn (or a remote memory), as the model is given it.
type Item struct {
	Source     string  `json:"source"`  // "local" (an archived turn) or a remote's name ("openviking")
	Session    string  `json:"session"` // a remote memory's URI
	Turn       int     `json:"turn"`    // 0 for a remote memory
	Generation int     `json:"generation,omitempty"`
	Time       string  `json:"time,omitempty"`
	Score      float64 `json:"score"` // local: the share of the prompt's weighed terms the turn holds; remote: the server's
	Text       string  `json:"text"`  // what the model is given for this item

	// head and body are an item's text before fit puts it in a passage:
	// where it came from, and what it holds.
	head, body string
	// follows: an archived turn given only as the one after the turn
	// before it, so only beside that turn.
	follows  bool
	precedes bool
}

const (
	// DefaultBudget bounds what per-prompt recall adds, in characters.
	DefaultBudget = 2000
	// DefaultMinScore is the floor: the share of the prompt's weighed terms
	// a turn must hold.
	DefaultMinScore = 0.4
	// maxItems bounds the turns one prompt is given (as many as the
	// OpenViking plugin gives).
	maxItems = 6
	// candidates is how many of search's best turns are weighed.
	candidates = 12
)

// Trivial reports whether a prompt is one recall stays quiet for: a slash
// command, a few characters, or nothing but acknowledgement and function
// words ("ok", "thanks", "go on", "sounds good").
func Trivial(prompt string) bool {
	p := strings.TrimSpace(prompt)
	if strings.HasPrefix(p, "/") || utf8.RuneCountInString(p) < 3 {
		return true
	}
	for _, w := range strings.Fields(p) {
		w = recall.NormalWord(w)
		if w != "" && !words.IsStopword(w) && !acks()[w] {
			return false
		}
	}
	return true
}

// acks are words of an acknowledgement or a nudge, which ask nothing of
// the history.
var acks = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`ack agreed alright awesome cheers cool continue correct done exactly fine go good great k kk lgtm looks
		lovely next nice noted np perfect proceed right sounds sure thx ty understood wonderful yeah yep yup`) {
		m[w] = true
	}
	return m
})

// Remote is a memory backend's search, asked beside the local archive
// (the OpenViking sink's: the server's memory search): the items that bear
// on a query, best first, each with its own score (0 to 1) and text.
type Remote func(ctx context.Context, query string, limit int) ([]Item, error)

// ErrRemote is a remote search that failed or was late: the local items
// stand.
var ErrRemote = errors.New("remote recall")

// DefaultRemoteWait is how long recall waits for the remote search: past it
// the prompt gets what the local archive has.
const DefaultRemoteWait = 800 * time.Millisecond

// Recall returns what per-prompt recall adds for r: nil when the prompt is
// trivial or nothing is relevant enough. With r.Remote set, the remote
// search runs beside the local one, bounded by r.RemoteWait, and the two
// are merged (best of each in turn); a remote that fails or is late costs
// the prompt that wait, nothing more (its error is returned beside the
// local items).
func Recall(ctx context.Context, db *ledger.DB, projects *recall.Projects, r Request) ([]Item, error) {
	return Prepare(projects, r).Finish(ctx, db)
}

// Prepared is per-prompt recall as far as it goes without the ledger: the
// project's window read from its file and the prompt's turns ranked in
// it, the remote search under way. A hook prepares it beside its own
// ledger work and finishes it on its own connection after, so a prompt
// opens the ledger once.
type Prepared struct {
	r       Request
	home    string
	quiet   bool // a trivial prompt, or one that reads as FTS5 syntax
	terms   [][]string
	dates   []recall.DateSpan
	project string
	// projects finds what the start block gave the thread (its
	// continuity's goal and notes): a turn whose prompt it quotes is not
	// given again. Read only when a turn could be given (most prompts find
	// none), not on every prompt.
	projects *recall.Projects
	win      *recall.Window
	hits     []windowHit
	remote   chan remoteAnswer
}

type remoteAnswer struct {
	items []Item
	err   error
}

// Prepare reads r's project's window file and ranks its turns for r's
// prompt, and starts the remote search; it does not open the ledger.
func Prepare(projects *recall.Projects, r Request) *Prepared {
	p := &Prepared{r: r, home: projects.Home()}
	if Trivial(r.Prompt) {
		p.quiet = true
		return p
	}
	if p.r.Budget <= 0 {
		p.r.Budget = DefaultBudget
	}
	if p.r.MinScore <= 0 {
		p.r.MinScore = DefaultMinScore
	}
	if p.r.RemoteWait <= 0 {
		p.r.RemoteWait = DefaultRemoteWait
	}
	if r.Remote != nil {
		p.remote = make(chan remoteAnswer, 1)
		rctx, cancel := context.WithTimeout(context.Background(), p.r.RemoteWait)
		go func() {
			defer cancel()
			items, err := r.Remote(rctx, r.Prompt, maxItems)
			p.remote <- remoteAnswer{items, err}
		}()
	}
	pq, err := recall.ParseQuestion(r.Prompt)
	if err != nil || !pq.Natural {
		p.quiet = true // a prompt that reads as FTS5 syntax is not a question to recall for
		return p
	}
	p.terms, p.dates = pq.Phrases(), pq.Dates
	if r.Project != "" {
		p.project = projects.Of(r.Project)
		p.projects = projects
	}
	if p.win = recall.LoadWindow(p.home, p.project); p.win != nil {
		p.hits = rank(p.win, p.terms, p.dates, r.Session, p.r.MinScore, p.near())
	}
	return p
}

// Finish completes per-prompt recall with db: a window file missing or
// older than the index is read again (and written), what the thread was
// given before is left out, the remote's items are merged, and all is
// fitted to the budget.
func (p *Prepared) Finish(ctx context.Context, db *ledger.DB) ([]Item, error) {
	if p.quiet && p.remote == nil {
		return nil, nil
	}
	if !p.quiet {
		if err := p.current(ctx, db); err != nil {
			return nil, err
		}
	}
	var ans remoteAnswer
	if p.remote != nil {
		select {
		case ans = <-p.remote:
		case <-ctx.Done(): // a remote that does not heed its own deadline
			ans.err = ctx.Err()
		}
	}
	// What the thread was given before, asked only when something could
	// be given again (most prompts find nothing relevant).
	given := map[string]bool{}
	if p.r.Session != "" && (len(p.hits) > 0 || len(ans.items) > 0) {
		var err error
		if given, err = db.GivenTurns(ctx, p.r.Session); err != nil {
			return nil, err
		}
	}
	var far []Item
	for _, it := range ans.items {
		if !given[it.Session+"/0"] {
			far = append(far, it)
		}
	}
	var farErr error
	if ans.err != nil {
		farErr = fmt.Errorf("%w: %w", ErrRemote, ans.err)
	}
	if p.quiet {
		return nil, farErr
	}
	return fit(p.local(given), far, p.r.Budget), farErr
}

// near is the nearness of words rank weighs, nil when off.
func (p *Prepared) near() func(string) []nearwords.Near {
	if !p.r.Near {
		return nil
	}
	return nearwords.Of
}

// current reads the window again when the index has moved on from it (or
// there was no file), and ranks it again.
func (p *Prepared) current(ctx context.Context, db *ledger.DB) error {
	stamp, err := db.RecallWindowStamp(ctx, p.project)
	if err != nil {
		return err
	}
	if p.win == nil || p.win.Stamp() != stamp {
		if p.win, err = recall.ReadWindow(ctx, db, p.home, p.project, p.win); err != nil {
			return err
		}
		p.hits = rank(p.win, p.terms, p.dates, p.r.Session, p.r.MinScore, p.near())
	}
	return nil
}

// local is the window's turns above the floor, best first, that the
// thread was not given before.
func (p *Prepared) local(given map[string]bool) []Item {
	var items []Item
	var said continuity.Said
	if len(p.hits) > 0 && p.projects != nil {
		said = p.projects.Said(p.r.Project)
	}
	taken := map[ledger.Place]bool{}
	for _, h := range p.hits {
		if len(items) == candidates {
			break
		}
		t := p.win.Turn(h.turn)
		if given[fmt.Sprintf("%s/%d", t.SessionID, t.Turn)] || saidAtStart(said, t.Body) || h.follows && !taken[ledger.Place{SessionID: t.SessionID, Turn: t.Turn - 1}] || h.precedes && !taken[ledger.Place{SessionID: t.SessionID, Turn: t.Turn + 1}] {
			continue
		}
		taken[ledger.Place{SessionID: t.SessionID, Turn: t.Turn}] = true
		items = append(items, Item{Source: "local", Session: t.SessionID, Turn: t.Turn, Generation: t.Generation, Time: t.At.Format(time.RFC3339),
			Score: math.Round(h.cover*100) / 100, head: itemHead(t.RecallHit), body: withoutSaid(said, t.Body), follows: h.follows, precedes: h.precedes})
	}
	return items
}

// saidAtStart reports whether an item's prompt (its body's first line) is
// one the continuity quotes: as the goal, or as a note to keep.
func saidAtStart(said continuity.Said, body string) bool {
	prompt, _, _ := strings.Cut(body, "\n")
	prompt, ok := strings.CutPrefix(prompt, "› ")
	if !ok {
		return false
	}
	if g := strings.TrimSuffix(said.Goal, "…"); utf8.RuneCountInString(g) >= 12 && strings.HasPrefix(prompt, strings.TrimSuffix(g, "…")) {
		return true
	}
	for n := range said.Notes {
		if utf8.RuneCountInString(n) >= 12 && strings.Contains(prompt, strings.TrimSuffix(n, "…")) {
			return true
		}
	}
	return false
}

// withoutSaid is an item's body without the lines that say again what the
// continuity given at the start says: a command it lists, a plan whose
// open steps it lists, a file it lists (the turn's prompt and reply stay:
// they are what the item is for).
func withoutSaid(said continuity.Said, body string) string {
	if len(said.Commands)+len(said.Plan)+len(said.Files) == 0 {
		return body
	}
	lines := strings.Split(body, "\n")
	kept := lines[:1]
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "$ "):
			cmd := strings.TrimPrefix(l, "$ ")
			if i := strings.LastIndex(cmd, " (exit "); i >= 0 {
				cmd = cmd[:i]
			}
			if said.Commands[cmd] {
				continue
			}
		case strings.HasPrefix(l, recall.ToolMark+"plan: "):
			steps := strings.Split(strings.TrimPrefix(l, recall.ToolMark+"plan: "), "; ")
			n := 0
			for _, st := range steps {
				if len(st) > 4 && said.Plan[strings.TrimSuffix(st[4:], "…")] {
					n++
				}
			}
			if 2*n >= len(steps) {
				continue
			}
		case strings.HasPrefix(l, "files: "):
			var fs []string
			for _, f := range strings.Split(strings.TrimPrefix(l, "files: "), ", ") {
				if !said.Files[f] {
					fs = append(fs, f)
				}
			}
			if len(fs) == 0 {
				continue
			}
			l = "files: " + strings.Join(fs, ", ")
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, "\n")
}

// fit takes items from the two lists in turn, best first, within the
// budget and maxItems (one that does not fit leaves room for a shorter one).
// Archived turns next to each other in one session are given as one
// passage, in their order, under one heading: the first is headed by where
// it came from, each after it by its turn alone, so a turn and the one
// that answers it cost one heading, not two.
func fit(local, far []Item, budget int) []Item {
	type passage struct {
		session string
		items   []Item // in turn order
	}
	var passages []*passage // local ones in the order they began (best first); far ones alone
	find := func(it Item) *passage {
		for _, p := range passages {
			if p.session == it.Session && it.Source == "local" && it.Turn >= p.items[0].Turn-1 && it.Turn <= p.items[len(p.items)-1].Turn+1 {
				return p
			}
		}
		return nil
	}
	used, n := 0, 0
	for i := 0; n < maxItems && (i < len(local) || i < len(far)); i++ {
		for _, list := range [][]Item{local, far} {
			if i >= len(list) || n == maxItems {
				continue
			}
			it := list[i]
			if it.head == "" && it.body == "" {
				it.body = it.Text // a remote's memory: its text whole
			}
			p := find(it)
			if it.follows && (p == nil || !slices.ContainsFunc(p.items, func(x Item) bool { return x.Turn == it.Turn-1 })) {
				continue // the turn it follows was not given
			}
			if it.precedes && (p == nil || !slices.ContainsFunc(p.items, func(x Item) bool { return x.Turn == it.Turn+1 })) {
				continue // the turn it precedes was not given
			}
			cost := utf8.RuneCountInString(it.body)
			if p == nil {
				cost += utf8.RuneCountInString(it.head)
			} else {
				cost += utf8.RuneCountInString(turnHead(it.Turn))
			}
			if used+cost > budget {
				continue
			}
			used, n = used+cost, n+1
			if p == nil {
				passages = append(passages, &passage{session: it.Session, items: []Item{it}})
				continue
			}
			at, _ := slices.BinarySearchFunc(p.items, it.Turn, func(x Item, t int) int { return x.Turn - t })
			p.items = slices.Insert(p.items, at, it)
		}
	}
	var out []Item
	for _, p := range passages {
		for k, it := range p.items {
			head := it.head
			if k > 0 {
				head = turnHead(it.Turn)
			}
			it.Text, it.head, it.body = head+it.body, "", ""
			out = append(out, it)
		}
	}
	return out
}

// Give is Finish, the items then recorded in db as given to the thread
// (MarkGiven), so none is given to it again: per-prompt recall's second
// half in one call. A record that fails leaves the items (its error is
// returned beside them).
func (p *Prepared) Give(ctx context.Context, db *ledger.DB) ([]Item, error) {
	items, err := p.Finish(ctx, db)
	if len(items) > 0 && p.r.Session != "" {
		if merr := MarkGiven(ctx, db, p.r.Session, items); merr != nil {
			err = errors.Join(err, fmt.Errorf("record what was given: %w", merr))
		}
	}
	return items, err
}

// MarkGiven records in db that items were given to a thread, so none is
// given to it again.
func MarkGiven(ctx context.Context, db *ledger.DB, session string, items []Item) error {
	var given []ledger.Given
	for _, it := range items {
		given = append(given, ledger.Given{Source: it.Session, Turn: it.Turn})
	}
	return db.MarkGiven(ctx, session, given)
}

// itemHead heads a recalled turn: when it was, and the command that shows
// it whole (which names its session and turn).
func itemHead(h ledger.RecallHit) string {
	return fmt.Sprintf("[%s · cx ctl show %s --turn %d]\n", h.At.Format("2006-01-02"), h.SessionID, h.Turn)
}

// turnHead heads a recalled turn given right after a neighbour of its
// session, under that neighbour's heading.
func turnHead(turn int) string { return fmt.Sprintf("[turn %d]\n", turn) }

// Result is per-prompt recall as `cx ctl recall` prints it.
type Result struct { // fields in the order the command always printed them
	Enabled bool   `json:"enabled"`
	Items   []Item `json:"items"`
	Project string `json:"project"`
	Prompt  string `json:"prompt"`
}

// MarshalJSON gives no items as [], not null.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	if r.Items == nil {
		r.Items = []Item{}
	}
	return json.Marshal(plain(r))
}

// WriteText is per-prompt recall for a terminal.
func (r Result) WriteText(w io.Writer) {
	fmt.Fprint(w, ItemsText(r.Prompt, r.Items))
	if !r.Enabled {
		fmt.Fprintln(w, "(per-prompt recall is off: [recall] enabled = false, or CX_RECALL_OFF=1)")
	}
}

// ItemsText renders recall's items for a terminal.
func ItemsText(prompt string, items []Item) string {
	if len(items) == 0 {
		if Trivial(prompt) {
			return fmt.Sprintf("nothing recalled: %q is a prompt recall stays quiet for\n", rollout.OneLine(prompt, 60))
		}
		return fmt.Sprintf("nothing recalled: no archived turn is relevant enough to %q\n", rollout.OneLine(prompt, 60))
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s, score %.2f\n%s\n", it.Source, it.Score, it.Text)
	}
	return b.String()
}
