package ledger

import (
	"context"
	"errors"
	"fmt"
)

// ScrubKey is the meta key that says the ledger may still hold, in free
// pages or in the free space of its pages, content deleted before deletes
// were zeroed (schema 9): the next Scrub vacuums it away.
const ScrubKey = "scrub"

// ErrWALHeld means the write-ahead log could not be emptied: another
// process reads the ledger, and the WAL still holds copies of pages from
// before a forget until the next checkpoint.
var ErrWALHeld = errors.New("the ledger's write-ahead log is in use by another process")

// Scrub makes what was deleted gone from the ledger's files, not only
// from its rows: the deletes themselves were zeroed (secure_delete, FTS5
// secure-delete); a ledger that freed content before that is vacuumed once;
// and the WAL — which holds earlier images of the pages — is checkpointed
// into the database and truncated to nothing. It reports whether it
// vacuumed.
func (db *DB) Scrub(ctx context.Context) (vacuumed bool, err error) {
	pending, err := db.Meta(ctx, ScrubKey)
	if err != nil {
		return false, fmt.Errorf("scrub ledger: %w", err)
	}
	if pending != "" {
		// VACUUM rewrites every page from the live rows alone; it runs
		// outside any transaction.
		if _, err := db.db.ExecContext(ctx, `VACUUM`); err != nil {
			return false, fmt.Errorf("scrub ledger: vacuum: %w", err)
		}
		vacuumed = true
		if err := db.Tx(ctx, func(tx *Tx) error { return tx.DeleteMeta(ctx, ScrubKey) }); err != nil {
			return vacuumed, fmt.Errorf("scrub ledger: %w", err)
		}
	}
	var busy, logFrames, checkpointed int
	if err := db.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed); err != nil {
		return vacuumed, fmt.Errorf("scrub ledger: checkpoint: %w", err)
	}
	if busy != 0 {
		return vacuumed, ErrWALHeld
	}
	return vacuumed, nil
}
