package lifecycle

import (
	"context"
	"time"

	"cx/internal/ledger"
)

// SessionView is one session as `cx ctl sessions --json` prints it: the one
// declaration of that shape, shared by the command, the end-to-end harness
// and the tests.
type SessionView struct {
	ID             string   `json:"id"`
	Status         string   `json:"status"`
	EndReason      string   `json:"end_reason"`
	RunID          string   `json:"run_id"`
	Generation     int      `json:"generation"`
	Commits        int      `json:"commits"`
	Turns          int      `json:"turns"`
	TotalTurns     int      `json:"total_turns"`
	TranscriptPath string   `json:"transcript_path"`
	Cwd            string   `json:"cwd"`
	Sinks          []string `json:"sinks"`
	Interrupted    int      `json:"interrupted_turns"`
	Compactions    int      `json:"compactions"`
	Placeholders   int      `json:"placeholders"`
	CreatedAt      string   `json:"created_at"`
	LastSeen       string   `json:"last_seen"`
	EndedAt        *string  `json:"ended_at"`
}

// ViewSession is the view of one ledger session.
func (m *Manager) ViewSession(ctx context.Context, s ledger.Session) SessionView {
	commits, _ := m.DB.Commits(ctx, s.ID)
	total, _ := m.DB.TotalTurns(ctx, s.ID)
	sinks := s.Sinks
	if sinks == nil {
		sinks = []string{}
	}
	return SessionView{ID: s.ID, Status: s.Status, EndReason: s.EndReason, RunID: s.RunID, Generation: s.Generation,
		Commits: commits, Turns: s.Turns, TotalTurns: total, TranscriptPath: s.TranscriptPath, Cwd: s.Cwd, Sinks: sinks,
		Interrupted: s.Interrupted, Compactions: s.Compactions, Placeholders: s.Placeholders,
		CreatedAt: RFC3339(s.CreatedAt), LastSeen: RFC3339(s.LastSeen), EndedAt: RFC3339Ptr(s.EndedAt)}
}

// RFC3339 is how every time in cx's output is written (UTC); "" for none.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// RFC3339Ptr is RFC3339 for an optional time: nil stays null.
func RFC3339Ptr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := RFC3339(*t)
	return &s
}
