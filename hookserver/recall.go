package hookserver

import (
	"context"
	"time"

	"cx/internal/codex"
	"cx/internal/config"
	"cx/internal/logs"
	"cx/internal/recall"
	ovsink "cx/internal/sink/openviking"
)

// recallBudget bounds per-prompt recall from the hook's start: past it the
// prompt goes on without (a query SQLite is still running is interrupted).
const recallBudget = 1500 * time.Millisecond

// wantsRecall reports whether this event gets per-prompt recall.
func wantsRecall(ev string, p codex.HookPayload, cfg config.Config) bool {
	return ev == codex.HookUserPromptSubmit && cfg.Inject.Enabled && cfg.Recall.Enabled && cfg.Home != "" && !recall.Trivial(p.Prompt)
}

// promptRecall is per-prompt recall for one prompt: the items to add. It
// runs beside the hook's own ledger work, on a connection of its own, and
// only reads; whatever fails, the prompt goes on without it (logged).
func promptRecall(ctx context.Context, cfg config.Config, getenv func(string) (string, bool), p codex.HookPayload, logger *logs.Logger) []recall.Item {
	ar, err := recall.OpenForPrompt(ctx, cfg.Home)
	if err != nil {
		logger.Printf("recall %s: %v", p.SessionID, err)
		return nil
	}
	// Not closed: closing takes half a millisecond the prompt would wait
	// for, and the process exits right after the answer (as the hook's own
	// connection, SQLite's WAL is safe without it).
	items, err := ar.Recall(ctx, recall.PromptRequest{Prompt: p.Prompt, Project: p.Cwd, Session: p.SessionID,
		Budget: cfg.Recall.MaxChars, MinScore: cfg.Recall.MinScore, Remote: ovsink.RecallSource(cfg, getenv)})
	if err != nil {
		// A remote that failed still leaves the local items.
		logger.Printf("recall %s: %v", p.SessionID, err)
	}
	return items
}
