package fsutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is a lock another process holds.
var ErrLocked = errors.New("held by another process")

// Lock takes the exclusive flock of path (created 0600 if missing): with
// wait it blocks until the lock is free, without it fails at once with
// ErrLocked. unlock releases it. The one file lock cx's processes share.
func Lock(path string, wait bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// LockContext waits for path's lock until ctx ends, trying every 20 ms (a
// blocked flock cannot be abandoned).
func LockContext(ctx context.Context, path string) (unlock func(), err error) {
	for {
		unlock, err := Lock(path, false)
		if !errors.Is(err, ErrLocked) {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Held reports whether another process holds path's lock (a probe: the
// lock is taken and dropped at once; false when path cannot be opened).
func Held(path string) bool {
	unlock, err := Lock(path, false)
	if err != nil {
		return errors.Is(err, ErrLocked)
	}
	unlock()
	return false
}
