package hookserver

import (
	"context"
	"runtime/debug"
	"time"

	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/recall"
	"cx/internal/recall/prompt"
	"cx/internal/sinks"
)

// recallBudget bounds per-prompt recall from the hook's start: past it the
// prompt goes on without (a query SQLite is still running is interrupted).
const recallBudget = 1500 * time.Millisecond

// wantsRecall reports whether this event gets per-prompt recall: a
// subagent's task is no prompt of the user's, and gets none.
func wantsRecall(ev string, p codex.HookPayload, cfg config.Config) bool {
	return ev == codex.HookUserPromptSubmit && !p.FromSubagent() && cfg.Inject.Enabled && cfg.Recall.Enabled && cfg.Home != "" && !prompt.Trivial(p.Prompt)
}

// promptRecall is per-prompt recall for one hook: started beside the
// hook's work, given after it. The zero value gives nothing.
type promptRecall struct {
	prepared chan *prompt.Prepared
	logger   *logs.Logger
}

// startRecall starts per-prompt recall's first half when the event wants
// it: the project's window read from its file and ranked, the remote
// search started; it opens no ledger.
func startRecall(ev string, p codex.HookPayload, cfg config.Config, getenv func(string) (string, bool), logger *logs.Logger) promptRecall {
	if !wantsRecall(ev, p, cfg) {
		return promptRecall{}
	}
	r := promptRecall{prepared: make(chan *prompt.Prepared, 1), logger: logger}
	go func() {
		var prep *prompt.Prepared
		defer func() {
			if v := recover(); v != nil {
				logger.Printf("hook %s %s: recall: panic: %v\n%s", ev, p.SessionID, v, debug.Stack())
			}
			r.prepared <- prep
		}()
		prep = prompt.Prepare(recall.NewProjects(cfg.Home), prompt.Request{Prompt: p.Prompt, Project: p.Cwd, Session: p.SessionID,
			Budget: cfg.Recall.MaxChars, MinScore: cfg.Recall.MinScore, Near: cfg.Recall.Dense, Remote: sinks.RemoteRecall(cfg, getenv)})
	}()
	return r
}

// give is per-prompt recall's second half, within recallBudget of the
// hook's start, on db (the hook's own connection, after its work; a
// read-only one of recall's own when the hook could not open the ledger):
// the items to add, recorded as given to the thread. Whatever fails, the
// prompt goes on without them (logged).
func (r promptRecall) give(ctx context.Context, start time.Time, cfg config.Config, db *ledger.DB, p codex.HookPayload) (items []prompt.Item) {
	if r.prepared == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			r.logger.Printf("recall %s: panic: %v\n%s", p.SessionID, v, debug.Stack())
			items = nil
		}
	}()
	prep := <-r.prepared
	if prep == nil {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(recallBudget))
	defer cancel()
	give := prep.Give
	if db == nil {
		var err error
		if db, err = ledger.Open(ctx, cfg.Home, ledger.Prompt, ledger.Options{}); err != nil {
			r.logger.Printf("recall %s: %v", p.SessionID, err)
			return nil
		}
		defer db.Close()
		give = prep.Finish // read only: what it gives cannot be recorded (it may be given again)
	}
	items, err := give(ctx, db)
	if err != nil {
		// A remote that failed still leaves the local items; a record of
		// what was given that failed leaves them given (they may be again).
		r.logger.Printf("recall %s: %v", p.SessionID, err)
	}
	return items
}

// quotedItems are the archived turns a start block quoted, as recall's
// items, to be marked given.
func quotedItems(quoted []inject.Quote) []prompt.Item {
	items := make([]prompt.Item, 0, len(quoted))
	for _, q := range quoted {
		items = append(items, prompt.Item{Source: "local", Session: q.Session, Turn: q.Turn})
	}
	return items
}
