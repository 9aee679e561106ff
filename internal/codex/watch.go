package codex

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ThreadWatch wakes whoever learns Codex's threads when one may have
// appeared: a writer lock file created in thread-writer-locks/ (0.169) or
// a rollout created in today's sessions folder (both versions) — so
// discovery need not poll often to learn them promptly. In a fresh Codex
// home neither folder exists yet: it also watches the folders above them,
// so their creation wakes discovery (which then watches them too).
//
// Only creations (and moves into a folder) wake, and only they are asked
// of the system (creations: inotify's on Linux, fsnotify's kqueue
// elsewhere): a live rollout is written at every event, in the folder
// watched. All else here is one code path on both systems.
type ThreadWatch struct {
	home string
	C    chan struct{} // a wake-up, coalesced

	mu      sync.Mutex
	w       *creations
	watched map[string]bool
	waking  bool // a wake-up is due once the burst settles
	// locksOnly: Codex keeps writer locks, so the locks folder tells.
	locksOnly bool
}

// settle is how long after the first relevant event the watch wakes its
// watcher, gathering the events that come meanwhile into one wake-up:
// every Codex of a home creates its files in the same folders, and each
// run that looked at each creation spent most of its CPU so, beside many
// others.
const settle = 200 * time.Millisecond

// WatchThreads starts watching home; nil when the system gives no watch
// (discovery then polls only). locksOnly, for a Codex that keeps writer
// locks (KeepsWriterLocks), watches the locks folder alone: such a Codex
// makes a thread's lock (an empty file) as it loads the thread, before
// its rollout, so one folder tells — and where the system tells of every
// change (fsnotify's inotify asked for all), a rollout's folder had an
// event for every line any Codex of the home wrote, read by every cx
// watching it (7% of a `cx exec` wrapper's CPU, 4 at once).
func WatchThreads(home string, locksOnly bool) *ThreadWatch {
	if home == "" {
		return nil
	}
	fw, err := newCreations()
	if err != nil {
		return nil
	}
	w := &ThreadWatch{home: home, C: make(chan struct{}, 1), w: fw, watched: map[string]bool{}, locksOnly: locksOnly}
	w.Refresh()
	go w.read()
	return w
}

// watchDirs are the folders a thread watch watches in home at now: the
// thread locks folder, today's sessions folder, and — so that their
// creation in a fresh Codex home is seen — the folders above them; home
// itself only until its sessions folder exists: home holds Codex's
// databases, and every write to them (Codex logs to one all the time)
// would be an event to read, in every cx watching that home.
func watchDirs(home string, now time.Time, locksOnly bool) []string {
	if locks := filepath.Join(home, threadLocksDir); locksOnly {
		if _, err := os.Stat(locks); err != nil {
			return []string{locks, home} // home until the first thread makes the folder
		}
		return []string{locks}
	}
	sessions := filepath.Join(home, "sessions")
	year := filepath.Join(sessions, now.Format("2006"))
	month := filepath.Join(year, now.Format("01"))
	dirs := []string{
		filepath.Join(home, threadLocksDir),
		sessions, year, month,
		filepath.Join(month, now.Format("02")),
	}
	if _, err := os.Stat(sessions); err != nil {
		dirs = append(dirs, home)
	}
	return dirs
}

// FastLook is how soon discovery looks again while it is learning.
const FastLook = 500 * time.Millisecond

// NextLook is how long discovery waits before its next look at a Codex
// process, after one that learned something or not, with this watch (nil:
// none). While it learns, or its run has not recorded Codex yet, it looks
// again soon, then backs off to 4 s without a watch, 30 s with one. With
// a watch, once settled (the run knows a thread and each thread it knows
// has its rollout), it waits the 30 s at once: the watch wakes it for
// every new thread, and each look reads every descriptor Codex holds
// (measured: a third of a short run's discovery went to looks after the
// last thread was known).
func (w *ThreadWatch) NextLook(learned, recorded, settled bool, every time.Duration) time.Duration {
	slow := 4 * time.Second
	if w != nil {
		slow = 30 * time.Second
	}
	switch {
	case !recorded:
		return FastLook
	case w != nil && settled:
		return slow
	case learned:
		return FastLook
	}
	return min(slow, every*2)
}

// Refresh adds the folders that exist now and are not watched yet (the
// locks folder appears with the first thread; a new day has a new folder)
// and stops watching home once it is no longer needed.
func (w *ThreadWatch) Refresh() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	dirs := watchDirs(w.home, time.Now(), w.locksOnly)
	for _, d := range dirs {
		if w.watched[d] {
			continue
		}
		if err := w.w.Add(d); err == nil {
			w.watched[d] = true
		}
	}
	if w.watched[w.home] && !slices.Contains(dirs, w.home) {
		_ = w.w.Remove(w.home)
		delete(w.watched, w.home)
	}
}

func (w *ThreadWatch) read() {
	for {
		select {
		case name, ok := <-w.w.created:
			if !ok {
				return // closed
			}
			if w.relevant(name) {
				w.wake()
			}
		case _, ok := <-w.w.lost:
			if !ok {
				return
			}
			w.wake() // an overflow lost events: wake rather than miss one
		}
	}
}

// wake wakes the watcher settle after the first event of a burst (C holds
// one wake-up: more are coalesced).
func (w *ThreadWatch) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waking {
		return
	}
	w.waking = true
	time.AfterFunc(settle, func() {
		w.mu.Lock()
		w.waking = false
		w.mu.Unlock()
		select {
		case w.C <- struct{}{}:
		default:
		}
	})
}

// relevant reports whether a creation may mean a new thread: any in a
// watched folder but home — in home itself only the two folders that
// matter, not the other files Codex creates there (databases, history,
// temp files).
func (w *ThreadWatch) relevant(name string) bool {
	if filepath.Dir(name) != w.home {
		return true
	}
	base := filepath.Base(name)
	return base == threadLocksDir || base == "sessions"
}

// Close stops watching.
func (w *ThreadWatch) Close() {
	if w != nil {
		_ = w.w.Close()
	}
}
