package lifecycle

import (
	"context"

	"cx/internal/readmodel"
)

// CommitNow ends the session's live generation now (reason manual, `cx
// ctl commit`) and works the outbox.
func (m *Manager) CommitNow(ctx context.Context, id string) (readmodel.CommitView, error) {
	if _, err := readmodel.Lookup(ctx, m.db, id); err != nil {
		return readmodel.CommitView{}, err
	}
	ended, err := m.End(ctx, id, ReasonManual, EndOptions{})
	if err != nil {
		return readmodel.CommitView{}, err
	}
	if _, err := m.outbox.Work(ctx, nil); err != nil {
		return readmodel.CommitView{}, err
	}
	out := readmodel.CommitView{Ended: ended}
	if ended {
		out.Reason = ReasonManual
	}
	s, err := m.db.Session(ctx, id)
	if err != nil {
		return out, err
	}
	out.Session = readmodel.Session(ctx, m.db, s)
	return out, nil
}
