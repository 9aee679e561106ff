package index

import (
	"context"
	"errors"

	"cx/internal/ledger"
	"cx/internal/recall"
)

// Upkeep keeps the index current after commits (the local sink's, which
// writes it, after a sweep or an import): the archives from before the
// index are indexed once (Backfill); the segments the commits added are
// merged — into one after many (an import: searches then seek each word
// once), a bounded step after a few (ledger.MergeRecall); and the windows
// they left stale are read again, so the next prompt need not read its
// window itself.
func Upkeep(ctx context.Context, db *ledger.DB, home string, commits int) error {
	_, err := Backfill(ctx, db, home)
	errs := []error{err}
	switch {
	case commits >= optimizeAfter:
		errs = append(errs, db.OptimizeRecall(ctx))
	case commits > 0:
		errs = append(errs, db.MergeRecall(ctx))
	}
	return errors.Join(append(errs, recall.RefreshWindows(ctx, db, home))...)
}

// optimizeAfter is how many commits' segments are merged into one rather
// than a step.
const optimizeAfter = 8
