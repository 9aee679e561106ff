// Package history is what cx keeps of Codex's history, by the user's
// hand: `cx ctl import` records the rollouts of a Codex home the ledger
// does not know, each as a session with one generation ended and committed
// (to the local archive and its recall index, unless told other sinks);
// `cx ctl forget` takes what a session said and did out of the ledger and
// its files (the ledger zeroes what it deletes), keeping the record that
// its generations were committed.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"cx/internal/cli"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/readmodel"
	"cx/internal/recall"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/testpoint"
	"cx/lifecycle"
)

// ReasonImport ends the one generation of a session `cx ctl import`
// recorded from Codex's own history.
const ReasonImport = sink.ReasonImport

// ImportOptions say what `cx ctl import` takes and where it sends it.
type ImportOptions struct {
	CodexHome string
	Since     time.Time // rollouts written since (zero: all)
	Sinks     []string  // nil: the local archive only
	DryRun    bool      // count only
	// Progress, when set, is told how far the import is (done of total).
	Progress func(done, total int)
}

// ImportResult is what an import did.
type ImportResult struct {
	CodexHome string `json:"codex_home"`
	Found     int    `json:"rollouts"` // rollouts in the Codex home
	Known     int    `json:"known"`    // already in the ledger
	Active    int    `json:"active"`   // still being written: left for later
	// ActiveUntil is when the last of those written by a Codex that keeps
	// no writer lock counts as done if left alone ("" when none is).
	ActiveUntil string `json:"active_until,omitempty"`
	Imported    int    `json:"imported"`  // recorded and committed now
	Empty       int    `json:"empty"`     // recorded, with no turn to archive
	Remaining   int    `json:"remaining"` // unknown ones a dry run would import
}

// Import records each rollout of a Codex home the ledger does not know as
// a session with one generation ended for ReasonImport, and commits it to
// the local archive (and the recall index) only, unless o.Sinks names
// others. Importing again imports nothing twice.
func Import(ctx context.Context, st State, o ImportOptions) (ImportResult, error) {
	home, _ := filepath.Abs(o.CodexHome)
	res := ImportResult{CodexHome: home}
	rollouts := codex.RolloutsSince(home, o.Since)
	res.Found = len(rollouts)
	var todo []string
	now := testpoint.Now()
	var until time.Time
	for id, path := range rollouts {
		if _, err := st.DB.Session(ctx, id); err == nil {
			res.Known++
			continue
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return res, err
		}
		// A dry run and the import judge alike what is still being written.
		if lv := codex.RolloutFileLiveness(home, id, path, now, st.Cfg.Lifecycle.ActiveWindow.Duration); lv.Live {
			res.Active++ // a session still running: its own hooks or a later import take it
			if lv.Until.After(until) {
				until = lv.Until
			}
			continue
		}
		todo = append(todo, id)
	}
	if !until.IsZero() {
		res.ActiveUntil = readmodel.RFC3339(until)
	}
	sort.Strings(todo)
	if o.DryRun {
		res.Remaining = len(todo)
		return res, nil
	}
	sinks := o.Sinks
	if sinks == nil {
		sinks = []string{"local"}
	}
	for i, id := range todo {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if o.Progress != nil {
			o.Progress(i, len(todo))
		}
		path := rollouts[id]
		err := st.M.Learn(ctx, ledger.Session{ID: id, TranscriptPath: path, CodexHome: home, Sinks: sinks, EndReason: ReasonImport},
			"session.imported", "recorded from Codex's history by cx ctl import")
		if err != nil {
			return res, fmt.Errorf("import %s: %w", id, err)
		}
		if _, err := st.M.End(ctx, id, ReasonImport, lifecycle.EndOptions{}); err != nil {
			return res, fmt.Errorf("import %s: %w", id, err)
		}
		if n, err := st.DB.TotalTurns(ctx, id); err == nil && n == 0 {
			res.Empty++
		}
		res.Imported++
	}
	if o.Progress != nil && len(todo) > 0 {
		o.Progress(len(todo), len(todo))
	}
	if res.Imported > 0 {
		if _, err := st.M.Outbox().Work(ctx, nil); err != nil {
			return res, err
		}
		// What the import indexed, one transaction per session, merged
		// (the local sink's upkeep).
		st.M.Upkeep(ctx)
	}
	return res, nil
}

// State is what history works on, opened by the entry point: the ledger
// (to write), cx's configuration, and the state machine over the ledger.
type State struct {
	DB  *ledger.DB
	Cfg config.Config
	M   *lifecycle.Manager
}

// ErrBusy is a session cx is still working on.
var ErrBusy = errors.New("still in use")

// Forget removes what a session said and did — its archives, captured
// turns, checkpoints and recall index rows — keeping the ledger's record
// that its generations were committed. A live session, or one with a
// commit still in the outbox, is refused: end it or let it commit first.
// It returns how many archived turns left the index.
func Forget(ctx context.Context, st State, id string) (int, error) {
	n := 0
	var words continuity.Forgotten
	var cwd string
	err := st.DB.Tx(ctx, func(tx *ledger.Tx) error {
		s, err := tx.Session(ctx, id)
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("%w: %s", readmodel.ErrNoSession, id)
		}
		if err != nil {
			return err
		}
		if s.Status == ledger.Live {
			return fmt.Errorf("session %s is live (%w): end it first with `cx ctl commit %s`", id, ErrBusy, id)
		}
		for g := 1; g <= s.Generation; g++ {
			jobs, err := tx.GenerationJobs(ctx, id, g)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if j.State == ledger.JobPending || j.State == ledger.JobLeased {
					return fmt.Errorf("session %s has a commit in the outbox (%w): let it finish (`cx ctl sweep`)", id, ErrBusy)
				}
			}
		}
		if words, err = sessionWords(ctx, tx, id); err != nil {
			return err
		}
		cwd = s.Cwd
		if n, err = tx.Forget(ctx, id); err != nil {
			return err
		}
		// Every stored copy of a continuity document (each archive keeps
		// the one its commit left) loses what came from this session too.
		drop := words.Drop()
		if _, err := tx.ForgetInContinuity(ctx, func(text string) (string, bool) {
			out, k := continuity.ForgetIn(text, drop)
			return out, k > 0
		}); err != nil {
			return err
		}
		return tx.AddEvent(ctx, "session.forgotten", id, "", fmt.Sprintf("%d turn(s) removed from the archive and the index", n))
	})
	if err != nil {
		return n, err
	}
	// Per-prompt recall's windows hold turns' text: they go, and are read
	// again from the ledger (a window written meanwhile from before this
	// forget removes itself, see internal/recall).
	if err := recall.DropWindows(st.Cfg.Home); err != nil {
		return n, fmt.Errorf("forget %s: %w", id, err)
	}
	if cwd == "" {
		return n, nil
	}
	// What the session merged into its project's continuity files goes too.
	store := continuity.Store{Home: st.Cfg.Home}
	if _, err := store.Forget(store.Identify(cwd), words); err != nil {
		return n, fmt.Errorf("forget %s: %w", id, err)
	}
	return n, nil
}

// sessionWords is what a session may have put in continuity documents,
// as archived: its prompts, commands, files, plan steps and Codex goals.
func sessionWords(ctx context.Context, tx *ledger.Tx, id string) (continuity.Forgotten, error) {
	f := continuity.Forgotten{SessionID: id}
	archives, err := tx.Archives(ctx, id)
	if err != nil {
		return f, err
	}
	for _, a := range archives {
		var turns []rollout.Turn
		if json.Unmarshal([]byte(a.Turns), &turns) != nil {
			continue
		}
		for _, t := range turns {
			f.Prompts = append(f.Prompts, t.User)
			for _, c := range t.Tools {
				if c.Command != "" {
					f.Commands = append(f.Commands, c.Command)
				}
			}
			for _, fe := range t.Files {
				f.Files = append(f.Files, fe.Path)
			}
			for _, st := range t.Plan {
				f.PlanSteps = append(f.PlanSteps, st.Step)
			}
			if t.Goal != nil {
				f.Goals = append(f.Goals, t.Goal.Objective)
			}
		}
	}
	return f, nil
}

// ProjectSessions lists the sessions whose working directory belongs to
// dir's project (the identity continuity uses).
func ProjectSessions(ctx context.Context, st State, dir string) ([]string, error) {
	all, err := st.DB.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	projects := recall.NewProjects(st.Cfg.Home)
	want := projects.Of(dir)
	var out []string
	for _, s := range all {
		if s.Cwd != "" && projects.Of(s.Cwd) == want {
			out = append(out, s.ID)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ProjectSessionsToForget are dir's project's sessions; none, for a
// directory that does not exist, is an error: a project whose directory is
// gone may still have sessions, one with neither is most likely a mistyped
// path.
func ProjectSessionsToForget(ctx context.Context, st State, dir string) ([]string, error) {
	ids, err := ProjectSessions(ctx, st, dir)
	if err != nil {
		return nil, err
	}
	if _, serr := os.Stat(dir); len(ids) == 0 && serr != nil {
		return nil, fmt.Errorf("no session of %s's project in the ledger, and no such directory", dir)
	}
	return ids, nil
}

// ForgetSays is ForgetAll's each as `cx ctl forget` says it: a line per
// session forgotten on out (nil: none, as for --json), each failure with
// errorf.
func ForgetSays(out io.Writer, errorf func(string, ...any)) func(id, parent string, n int, err error) {
	return func(id, parent string, n int, err error) {
		switch {
		case errors.Is(err, readmodel.ErrNoSession):
			errorf("no session %s in the ledger", id)
		case err != nil:
			errorf("forget: %v", err)
		case out != nil && parent != "":
			fmt.Fprintf(out, "  ↳ %s: forgotten with its parent, a subagent's (%s)\n", id, cli.Count(n, "archived turn"))
		case out != nil:
			fmt.Fprintf(out, "%s: forgotten (%s)\n", id, cli.Count(n, "archived turn"))
		}
	}
}

// ForgetReport is what forgetting sessions did, as `cx ctl forget --json`
// prints it.
type ForgetReport struct {
	Failed    int            `json:"failed"`
	Forgotten map[string]int `json:"forgotten"` // each session forgotten: its archived turns that left the index
	Scrubbed  bool           `json:"scrubbed"`  // no copy is left in the ledger's files
	// Children are the subagent sessions forgotten with each session named.
	Children map[string][]string `json:"children,omitempty"`
	// ScrubErr is why copies may remain (another process holds the WAL).
	ScrubErr error `json:"-"`
}

// ForgetAll forgets each session (told to each, in order), then scrubs
// the ledger's files once: gone from the bytes too, the database's free
// space and its WAL.
//
// A session's subagents go with it (their turns are the parent's work): each
// child after its parent, named in Children.
func ForgetAll(ctx context.Context, st State, ids []string, each func(id, parent string, turns int, err error)) ForgetReport {
	r := ForgetReport{Forgotten: map[string]int{}, Scrubbed: true}
	ids, r.Children = WithChildren(ctx, st.DB, ids)
	parent := map[string]string{}
	for p, kids := range r.Children {
		for _, k := range kids {
			parent[k] = p
		}
	}
	for _, id := range ids {
		n, err := Forget(ctx, st, id)
		each(id, parent[id], n, err)
		if err != nil {
			r.Failed++
			continue
		}
		r.Forgotten[id] = n
	}
	if len(r.Forgotten) > 0 {
		if _, err := st.DB.Scrub(ctx); err != nil {
			r.Scrubbed, r.ScrubErr = false, err
			r.Failed++
		}
	}
	return r
}

// WriteText is what `cx ctl import` prints; window is [lifecycle]
// active_window, after which a rollout of a Codex that keeps no writer
// lock (before 0.169) counts as done if left alone.
func (res ImportResult) WriteText(w io.Writer, dryRun bool, window time.Duration) {
	if dryRun {
		fmt.Fprintf(w, "%s: %s, %d already known, %d to import (cx ctl import), %d still being written\n", res.CodexHome, cli.Count(res.Found, "rollout"), res.Known, res.Remaining, res.Active)
	} else {
		fmt.Fprintf(w, "%s: %s, %d already known, %d imported (%d with no turns), %d still being written\n", res.CodexHome, cli.Count(res.Found, "rollout"), res.Known, res.Imported, res.Empty, res.Active)
	}
	if res.Active == 0 {
		return
	}
	until := ""
	if res.ActiveUntil != "" {
		until = fmt.Sprintf(", or (Codex before 0.169 keeps none) it was written within [lifecycle] active_window (%s): importable from %s if left alone", window, res.ActiveUntil)
	}
	fmt.Fprintln(w, "  still being written: a running Codex holds its writer lock"+until)
}

// WithChildren is ids with each one's subagent sessions (and theirs) after
// it, not named twice, and which children came with which session.
func WithChildren(ctx context.Context, db *ledger.DB, ids []string) ([]string, map[string][]string) {
	all, err := db.Sessions(ctx)
	if err != nil {
		return ids, nil
	}
	kids := map[string][]string{}
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		if p := sink.ParentOf(all[i]); p != "" {
			kids[p] = append(kids[p], all[i].ID)
		}
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	var out []string
	children := map[string][]string{}
	var add func(root, id string)
	add = func(root, id string) {
		for _, k := range kids[id] {
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, k)
			children[root] = append(children[root], k)
			add(root, k)
		}
	}
	for _, id := range ids {
		out = append(out, id)
		add(id, id)
	}
	if len(children) == 0 {
		children = nil
	}
	return out, children
}
