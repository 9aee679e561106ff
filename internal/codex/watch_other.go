//go:build !linux

package codex

// ThreadWatch is not built here yet (kqueue on macOS is issue 24's):
// WatchThreads returns nil and discovery polls, as it does where inotify
// is missing on Linux.
type ThreadWatch struct {
	C chan struct{}
}

// WatchThreads returns nil: no watch on this system.
func WatchThreads(string) *ThreadWatch { return nil }

// Refresh does nothing.
func (w *ThreadWatch) Refresh() {}

// Close does nothing.
func (w *ThreadWatch) Close() {}
