package codextest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	_ "modernc.org/sqlite" // the driver of the ledger held
)

// HoldLedger takes the write lock of the ledger in cxHome, as another cx
// process in a long transaction would, until release is called.
func HoldLedger(cxHome string) (release func(), err error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(cxHome, "cx.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("hold ledger: %w", err)
	}
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("hold ledger: %w", err)
	}
	return func() {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		db.Close()
	}, nil
}
