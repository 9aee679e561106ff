package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Forget removes what a session said and did from the ledger — its
// archives, captured turns, checkpoints, fold and index rows, the turns
// recall gave it or gave of it, its jobs' errors and its events' details,
// and what its runs were started with (the argv of a run that started no
// other session; only the flags of one that did, as a prompt argument is
// a positional one) — and keeps what it did to the ledger: its
// generations and their commits, so none is committed twice. It returns
// how many index rows went.
func (tx *Tx) Forget(ctx context.Context, sessionID string) (int, error) {
	var n int
	if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM recall_turns WHERE session_id = ?`, sessionID).Scan(&n); err != nil {
		return 0, err
	}
	if err := tx.unindex(ctx, `session_id = ?`, sessionID); err != nil {
		return 0, err
	}
	for _, q := range []string{
		`DELETE FROM archives WHERE session_id = ?`,
		`DELETE FROM turns WHERE session_id = ?`,
		`DELETE FROM session_folds WHERE session_id = ?`,
		`DELETE FROM recall_given WHERE session_id = ?1 OR source_session = ?1`,
		`UPDATE jobs SET last_error = '' WHERE session_id = ?`,
		`UPDATE events SET detail = '' WHERE session_id = ? AND detail != ''`,
		`UPDATE generations SET checkpoint = '' WHERE session_id = ?`,
		`UPDATE sessions SET meta = '' WHERE id = ?`,
	} {
		if _, err := tx.tx.ExecContext(ctx, q, sessionID); err != nil {
			return 0, fmt.Errorf("forget %s: %w", sessionID, err)
		}
	}
	if err := tx.forgetRunArgs(ctx, sessionID); err != nil {
		return 0, fmt.Errorf("forget %s: %w", sessionID, err)
	}
	return n, nil
}

// ForgetInContinuity rewrites the continuity each archive keeps (the
// documents as that commit left them, other sessions' included) with f,
// which says whether it changed a text; it returns how many changed.
func (tx *Tx) ForgetInContinuity(ctx context.Context, f func(string) (string, bool)) (int, error) {
	type copyOf struct {
		session string
		gen     int
		text    string
	}
	copies, err := list(ctx, tx.tx, func(s scanner) (copyOf, error) {
		var c copyOf
		return c, s.Scan(&c.session, &c.gen, &c.text)
	}, `SELECT session_id, generation, continuity FROM archives WHERE continuity != ''`)
	if err != nil {
		return 0, fmt.Errorf("forget in continuity: %w", err)
	}
	n := 0
	for _, c := range copies {
		text, changed := f(c.text)
		if !changed {
			continue
		}
		if _, err := tx.tx.ExecContext(ctx, `UPDATE archives SET continuity = ? WHERE session_id = ? AND generation = ?`, text, c.session, c.gen); err != nil {
			return n, fmt.Errorf("forget in continuity %s/%d: %w", c.session, c.gen, err)
		}
		n++
	}
	return n, nil
}

// forgetRunArgs takes a session's words out of what its runs were started
// with: the runs that own it (or owned it: their events name it).
func (tx *Tx) forgetRunArgs(ctx context.Context, sessionID string) error {
	runs, err := list(ctx, tx.tx, func(s scanner) (string, error) {
		var id string
		return id, s.Scan(&id)
	}, `SELECT run_id FROM sessions WHERE id = ?1 AND run_id != ''
		UNION SELECT run_id FROM events WHERE session_id = ?1 AND run_id != ''`, sessionID)
	if err != nil {
		return err
	}
	for _, id := range runs {
		r, err := tx.Run(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		var others int
		if err := tx.tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE run_id = ? AND id != ?`, id, sessionID).Scan(&others); err != nil {
			return err
		}
		keep := []string{}
		if others > 0 {
			for _, a := range r.Args {
				if strings.HasPrefix(a, "-") {
					keep = append(keep, strings.SplitN(a, "=", 2)[0])
				}
			}
		}
		data, _ := json.Marshal(keep)
		if _, err := tx.tx.ExecContext(ctx, `UPDATE runs SET args = ? WHERE id = ?`, string(data), id); err != nil {
			return err
		}
	}
	return nil
}
