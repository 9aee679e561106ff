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
// the same few dozen statements. Statements are prepared once per DB and
// kept (the hook host runs them for every hook it takes): a read outside
// a transaction at its first run; one in a transaction (whose connection
// the transaction holds) before the transaction after the one that ran it
// a second time — one a short process runs once is not prepared twice.

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
	once    map[string]bool // run once unkept in a transaction
}

// keepable reports whether query may be kept: not more than one
// statement, nor a pragma.
func keepable(query string) bool {
	q := strings.TrimSpace(query)
	return !strings.Contains(strings.TrimRight(q, ";"), ";") && !strings.HasPrefix(strings.ToUpper(q), "PRAGMA")
}

// get is query's kept statement; nil when it is not kept yet (run a
// second time, it is prepared before the next transaction) or never is
// (more than one statement, a pragma, the bound reached): the caller runs
// it unkept.
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts)+len(c.pending) >= maxStmts || !keepable(query) {
		return nil
	}
	if !c.once[query] {
		if c.once == nil {
			c.once = map[string]bool{}
		}
		c.once[query] = true
		return nil
	}
	if c.pending == nil {
		c.pending = map[string]bool{}
	}
	c.pending[query] = true
	return nil
}

// getNow is query's kept statement, prepared now on db if it is not kept
// yet; nil when it is never kept. Only outside a transaction of db's
// (preparing takes a connection).
func (c *stmtCache) getNow(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	st, ok := c.stmts[query]
	full := len(c.stmts)+len(c.pending) >= maxStmts
	c.mu.Unlock()
	if ok {
		return st
	}
	if full || !keepable(query) {
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil // run unkept: its error is the caller's to see
	}
	return c.keep(query, st)
}

// keep keeps st as query's statement, unless another was kept meanwhile
// (st is closed, the kept one returned).
func (c *stmtCache) keep(query string, st *sql.Stmt) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.stmts[query]; ok {
		st.Close()
		return kept
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	delete(c.once, query)
	return st
}

// prepare prepares the statements met since the last time, outside any
// transaction of the caller's; one that cannot be prepared is not kept.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for query := range pending {
		if st, err := db.PrepareContext(ctx, query); err == nil {
			c.keep(query, st)
		}
	}
}

// close closes every kept statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts, c.pending, c.once = nil, nil, nil
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

// keptDB runs a DB's statements outside a transaction kept.
type keptDB struct {
	*sql.DB
	cache *stmtCache
}

func (d keptDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := d.cache.getNow(ctx, d.DB, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.DB.QueryContext(ctx, query, args...)
}

func (d keptDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := d.cache.getNow(ctx, d.DB, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.DB.QueryRowContext(ctx, query, args...)
}
