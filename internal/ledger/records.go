package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// What every table shares: the statuses, the transaction, how times and
// lists are stored, and the generic row readers.

// Session statuses.
const (
	Live      = "live"
	Ended     = "ended"
	Committed = "committed"
	Empty     = "empty"
)

// Job states.
const (
	JobPending = "pending"
	JobLeased  = "leased"
	JobDone    = "done"
	JobParked  = "parked"
)

// Tx is a write transaction.
type Tx struct {
	tx  keptTx
	now time.Time
}

// Now is the transaction's timestamp.
func (tx *Tx) Now() time.Time { return tx.now }

// Now is the ledger's clock (a test may move it on), as a transaction
// begun now reads it.
func (db *DB) Now() time.Time { return db.now() }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func parseTSPtr(s sql.NullString) *time.Time {
	if !s.Valid || s.String == "" {
		return nil
	}
	t := parseTS(s.String)
	return &t
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func parseList(s string) []string {
	var v []string
	_ = json.Unmarshal([]byte(s), &v)
	if v == nil {
		v = []string{}
	}
	return v
}

// ErrNotFound is returned for a missing row.
var ErrNotFound = errors.New("not found")

type querier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

type scanner interface{ Scan(dest ...any) error }

// list runs a query and scans every row.
func list[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func tsOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ts(t)
}
