package ledger

import (
	"context"
	"database/sql"
	"strings"
	"sync"
)

// SQLite parses a statement's SQL each time it is prepared, and a
// statement run through database/sql without a *sql.Stmt is prepared
// anew each time: a hook's transactions spent most of their CPU parsing
// the same few dozen statements. A transaction's statements are prepared
// once per DB and kept (the hook host runs them for every hook it takes).

// maxStmts bounds the statements a DB keeps: SQL built with a varying
// shape (a list of ids) is run unkept once the bound is reached.
const maxStmts = 256

// stmtCache is a DB's kept statements, by their SQL, and those met in a
// transaction that are to be prepared before the next one begins (a
// statement is prepared on the DB, which needs a free connection: a writer
// has one, which its transaction holds).
type stmtCache struct {
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool
}

// get is query's kept statement; nil when it is not kept yet (it is
// prepared before the next transaction) or never is (more than one
// statement, a pragma, the bound reached): the caller runs it unkept.
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts)+len(c.pending) >= maxStmts || strings.Contains(strings.TrimRight(strings.TrimSpace(query), ";"), ";") ||
		strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), "PRAGMA") {
		return nil
	}
	if c.pending == nil {
		c.pending = map[string]bool{}
	}
	c.pending[query] = true
	return nil
}

// prepare prepares the statements met since the last time, outside any
// transaction of the caller's; one that cannot be prepared is not kept.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for query := range pending {
		st, err := db.PrepareContext(ctx, query)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, ok := c.stmts[query]; ok {
			st.Close()
		} else {
			if c.stmts == nil {
				c.stmts = map[string]*sql.Stmt{}
			}
			c.stmts[query] = st
		}
		c.mu.Unlock()
	}
}

// close closes every kept statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts, c.pending = nil, nil
}

// keptTx is a transaction that runs its statements kept.
type keptTx struct {
	*sql.Tx
	cache *stmtCache
}

func (t keptTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.cache.get(query); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t keptTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.cache.get(query); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t keptTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.cache.get(query); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
