package codex

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadWatch wakes whoever learns Codex's threads when one may have
// appeared: a writer lock file created in thread-writer-locks/ (0.169) or
// a rollout created in today's sessions folder (both versions), by inotify
// — so discovery need not poll often to learn them promptly.
type ThreadWatch struct {
	home string
	C    chan struct{} // a wake-up, coalesced

	mu      sync.Mutex
	fd      int // kept apart: os.File.Fd would make the file blocking
	f       *os.File
	watched map[string]bool
}

// WatchThreads starts watching home; nil when inotify is not available
// (discovery then polls only).
func WatchThreads(home string) *ThreadWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil || home == "" {
		return nil
	}
	w := &ThreadWatch{home: home, C: make(chan struct{}, 1), fd: fd, f: os.NewFile(uintptr(fd), "inotify"), watched: map[string]bool{}}
	w.Refresh()
	go w.read()
	return w
}

// Refresh adds the folders that exist now and are not watched yet (the
// locks folder appears with the first thread; a new day has a new folder).
func (w *ThreadWatch) Refresh() {
	if w == nil {
		return
	}
	now := time.Now()
	dirs := []string{
		filepath.Join(w.home, threadLocksDir),
		filepath.Join(w.home, "sessions", now.Format("2006"), now.Format("01"), now.Format("02")),
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range dirs {
		if w.watched[d] {
			continue
		}
		if _, err := unix.InotifyAddWatch(w.fd, d, unix.IN_CREATE|unix.IN_MOVED_TO); err == nil {
			w.watched[d] = true
		}
	}
}

func (w *ThreadWatch) read() {
	buf := make([]byte, 4096)
	for {
		if _, err := w.f.Read(buf); err != nil {
			return // closed
		}
		select {
		case w.C <- struct{}{}:
		default:
		}
	}
}

// Close stops watching.
func (w *ThreadWatch) Close() {
	if w != nil {
		_ = w.f.Close()
	}
}
