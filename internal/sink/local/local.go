// Package local is the local sink: it archives a generation in the ledger —
// its turns, its checkpoint and their recall index rows — and merges its evidence into the
// project's continuity files.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/codex"
	"cx/internal/continuity"
	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/recall/index"
	"cx/internal/rollout"
	"cx/internal/sink"
)

var _ sink.Sink = (*Sink)(nil)

// Sink is the local sink.
type Sink struct {
	h sink.Host
	// commits counts the archives stored since the last upkeep.
	commits atomic.Int64
}

var _ sink.Upkeeper = (*Sink)(nil)

// Upkeep keeps the search index this sink writes current after its
// commits (index.Upkeep).
func (l *Sink) Upkeep(ctx context.Context) error {
	if l.h.Index == nil {
		return nil
	}
	return index.Upkeep(ctx, l.h.Index, l.h.Cfg.Home, int(l.commits.Swap(0)))
}

// New returns the local sink.
func New(h sink.Host) *Sink { return &Sink{h: h} }

// Commit stores the archive and indexes its turns (storing it twice is a
// no-op, indexing it twice leaves one copy) after updating continuity
// (merging the same evidence twice changes nothing).
func (l *Sink) Commit(ctx context.Context, req sink.Request) error {
	turns, _ := json.Marshal(req.Turns)
	cpJSON, cont, cwd := req.Checkpoint, "", req.Session.Cwd
	var cp checkpoint.Checkpoint
	if cpJSON == "" || json.Unmarshal([]byte(cpJSON), &cp) != nil {
		// Ended before the ledger kept checkpoints: from the rollout, once.
		path := codex.FindRollout(req.Session.CodexHome, req.Session.ID, req.Session.TranscriptPath)
		data, err := readUpTo(path, req.Generation.EndOffset)
		if err != nil {
			if path != "" {
				l.h.Log.Printf("local commit %s g%d: rollout: %v (archiving the captured turns only)", req.Session.ID, req.Generation.Generation, err)
			}
			cpJSON = ""
		} else {
			cp = checkpoint.FromRollout(data, checkpoint.DefaultCaps)
			cpJSON = string(cp.JSON())
		}
	}
	if cwd == "" {
		cwd = cp.Cwd
	}
	store := continuity.Store{Home: l.h.Cfg.Home}
	var id continuity.Identity
	if cwd != "" {
		id = store.Identify(cwd) // the project of continuity and of the index
	}
	if cpJSON != "" {
		if cwd != "" && len(req.Turns) > 0 && req.Generation.EndReason != sink.ReasonImport {
			var ordinary func(string) bool
			if l.h.Index != nil {
				// Which words the project's sessions mostly hold, and so
				// name no line of work (read before this archive joins them).
				var err error
				if ordinary, err = recall.Ordinary(ctx, l.h.Index, l.h.Cfg.Home, id.ProjectID); err != nil {
					l.h.Log.Printf("local commit %s g%d: the project's words: %v (every word may link a line of work)", req.Session.ID, req.Generation.Generation, err)
				}
			}
			_, wt, err := store.Update(id, continuity.Evidence{
				SessionID: req.Session.ID, EndReason: req.Generation.EndReason, Turns: req.Turns, Plan: cp.Plan.Steps,
				Goal: goalAsItStands(cp.Goal, req.Session.CodexHome, req.Session.ID), Parent: cp.Parent, Ordinary: ordinary})
			if err != nil {
				return err
			}
			cont = wt
		}
	}
	err := l.h.Store.PutArchive(ctx, req.Session.ID, req.Generation.Generation, string(turns), cpJSON, cont, func(before int, at time.Time) []ledger.RecallDoc {
		return index.Docs(req.Session.ID, req.Generation.Generation, before, req.Turns, cwd, id.ProjectID, at)
	})
	if err == nil {
		l.commits.Add(1)
	}
	return err
}

// readUpTo reads a rollout's first n bytes (all of it when n is 0 or the
// file is shorter: it was rewritten since).
func readUpTo(path string, n int64) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no rollout")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if n > 0 && int64(len(data)) >= n {
		data = data[:n]
	}
	return data, nil
}

// goalAsItStands is Codex's goal for the thread as it stands: the one the
// rollout last showed, with the status Codex's goal store has now (a
// pause the rollout did not say); cleared when the store has none for a
// thread whose rollout showed one.
func goalAsItStands(g *rollout.Goal, codexHome, thread string) *rollout.Goal {
	if g == nil || g.Cleared() {
		return g
	}
	stored, known := codex.StoredGoal(codexHome, thread)
	switch {
	case !known:
		return g
	case stored == nil:
		return &rollout.Goal{Objective: g.Objective, Status: rollout.GoalCleared}
	case stored.Objective == g.Objective && stored.Status != "":
		return &rollout.Goal{Objective: g.Objective, Status: stored.Status}
	}
	return g
}
