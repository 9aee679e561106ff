package codex

import (
	"encoding/binary"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadWatch wakes whoever learns Codex's threads when one may have
// appeared: a writer lock file created in thread-writer-locks/ (0.169) or
// a rollout created in today's sessions folder (both versions), by inotify
// — so discovery need not poll often to learn them promptly. In a fresh
// Codex home neither folder exists yet: it also watches the folders above
// them, so their creation wakes discovery (which then watches them too).
type ThreadWatch struct {
	home string
	C    chan struct{} // a wake-up, coalesced

	mu      sync.Mutex
	fd      int // kept apart: os.File.Fd would make the file blocking
	f       *os.File
	watched map[string]bool
	homeWD  int32 // the watch on home itself: only its two folders matter
}

// WatchThreads starts watching home; nil when inotify is not available
// (discovery then polls only).
func WatchThreads(home string) *ThreadWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil || home == "" {
		return nil
	}
	w := &ThreadWatch{home: home, C: make(chan struct{}, 1), fd: fd, f: os.NewFile(uintptr(fd), "inotify"), watched: map[string]bool{}, homeWD: -1}
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
	dirs := watchDirs(w.home, time.Now())
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range dirs {
		if w.watched[d] {
			continue
		}
		wd, err := unix.InotifyAddWatch(w.fd, d, unix.IN_CREATE|unix.IN_MOVED_TO)
		if err != nil {
			continue
		}
		w.watched[d] = true
		if d == w.home {
			w.homeWD = int32(wd)
		}
	}
}

func (w *ThreadWatch) read() {
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed
		}
		if !w.relevant(buf[:n]) {
			continue
		}
		select {
		case w.C <- struct{}{}:
		default:
		}
	}
}

// relevant reports whether a read of inotify events names anything but
// the other files Codex creates in its home (databases, history, temp
// files): those must not wake discovery.
func (w *ThreadWatch) relevant(b []byte) bool {
	w.mu.Lock()
	homeWD := w.homeWD
	w.mu.Unlock()
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:4]))
		nameLen := int(binary.NativeEndian.Uint32(b[12:16]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(b) {
			return true // cut short: wake rather than miss
		}
		name := string(b[unix.SizeofInotifyEvent:end])
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		if wd != homeWD || name == threadLocksDir || name == "sessions" {
			return true
		}
		b = b[end:]
	}
	return false
}

// Close stops watching.
func (w *ThreadWatch) Close() {
	if w != nil {
		_ = w.f.Close()
	}
}
