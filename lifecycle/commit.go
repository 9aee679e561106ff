package lifecycle

import "context"

// CommitNow ends the session's live generation now (reason manual, `cx
// ctl commit`) and works the outbox; ended is false when nothing was live
// to end.
func (m *Manager) CommitNow(ctx context.Context, id string) (ended bool, err error) {
	if ended, err = m.End(ctx, id, ReasonManual, EndOptions{}); err != nil {
		return false, err
	}
	_, err = m.outbox.Work(ctx, nil)
	return ended, err
}
