package hookserver

import (
	"context"
	"time"

	"cx/inject"
	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/logs"
	"cx/internal/recall"
	"cx/internal/sinks"
)

// recallBudget bounds per-prompt recall from the hook's start: past it the
// prompt goes on without (a query SQLite is still running is interrupted).
const recallBudget = 1500 * time.Millisecond

// wantsRecall reports whether this event gets per-prompt recall: a
// subagent's task is no prompt of the user's, and gets none.
func wantsRecall(ev string, p codex.HookPayload, cfg config.Config) bool {
	return ev == codex.HookUserPromptSubmit && !p.FromSubagent() && cfg.Inject.Enabled && cfg.Recall.Enabled && cfg.Home != "" && !recall.Trivial(p.Prompt)
}

// prepareRecall is per-prompt recall's first half, run beside the hook's
// own ledger work: the project's window read from its file and ranked,
// the remote search started. It opens no ledger.
func prepareRecall(cfg config.Config, getenv func(string) (string, bool), p codex.HookPayload) *recall.Prepared {
	return recall.Prepare(recall.NewProjects(cfg.Home), recall.PromptRequest{Prompt: p.Prompt, Project: p.Cwd, Session: p.SessionID,
		Budget: cfg.Recall.MaxChars, MinScore: cfg.Recall.MinScore, Remote: sinks.RemoteRecall(cfg, getenv)})
}

// finishRecall is its second half, on db (the hook's own connection, after
// its work; a read-only one of recall's own when the hook could not open
// the ledger): the items to add. Whatever fails, the prompt goes on
// without them (logged).
func finishRecall(ctx context.Context, cfg config.Config, prep *recall.Prepared, db *ledger.DB, p codex.HookPayload, logger *logs.Logger) []recall.Item {
	if db == nil {
		ar, err := recall.OpenForPrompt(ctx, cfg.Home)
		if err != nil {
			logger.Printf("recall %s: %v", p.SessionID, err)
			return nil
		}
		defer ar.Close()
		db = ar.Ledger()
	}
	items, err := prep.Finish(ctx, db)
	if err != nil {
		// A remote that failed still leaves the local items.
		logger.Printf("recall %s: %v", p.SessionID, err)
	}
	return items
}

// quotedItems are the archived turns a start block quoted, as recall's
// items, to be marked given.
func quotedItems(quoted []inject.Quote) []recall.Item {
	items := make([]recall.Item, 0, len(quoted))
	for _, q := range quoted {
		items = append(items, recall.Item{Source: "local", Session: q.Session, Turn: q.Turn})
	}
	return items
}
