package fsutil

import (
	"errors"
	"fmt"
	"syscall"
)

// FullError is an error met writing under Dir while the disk holding it
// had no room left.
type FullError struct {
	Dir string
	Err error
}

func (e *FullError) Error() string {
	return fmt.Sprintf("%v (the disk holding %s is full)", e.Err, e.Dir)
}

func (e *FullError) Unwrap() error { return e.Err }

// Full returns err as a *FullError when the disk holding dir has no room
// left — SQLite reports a full disk as an I/O error on its shared-memory
// file, so the error alone may not say — and err as it is otherwise.
func Full(dir string, err error) error {
	if err == nil {
		return nil
	}
	var st syscall.Statfs_t
	if !errors.Is(err, syscall.ENOSPC) {
		if syscall.Statfs(dir, &st) != nil || int64(st.Bavail)*int64(st.Bsize) >= fullBelow {
			return err
		}
	}
	return &FullError{Dir: dir, Err: err}
}

// fullBelow is the free space under which a disk counts as full: less
// than SQLite needs to grow its journal by a few pages.
const fullBelow = 64 << 10
