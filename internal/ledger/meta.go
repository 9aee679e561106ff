package ledger

import (
	"context"
	"database/sql"
	"errors"
)

// Table meta: the ledger's own settings (schema version, a scrub due).
// Written by migrations and Scrub.

// Meta is the value stored under key ("" when there is none).
func (db *DB) Meta(ctx context.Context, key string) (string, error) { return getMeta(ctx, db.q(), key) }

func getMeta(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// PutMeta stores value under key.
func (tx *Tx) PutMeta(ctx context.Context, key, value string) error {
	_, err := tx.tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
