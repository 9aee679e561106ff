package codex

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder reads /proc/locks for a lock on path's inode: Linux keeps
// flock(2) locks apart from fcntl(2) ones, so F_GETLK would not see
// Codex's; /proc/locks lists both, each with the pid that took it (the
// field before MAJ:MIN:INODE; -1 for an open file description lock).
//
// The kernel gives /proc/locks a page a read, walking its list of locks
// again from the entry count each read reached: a lock taken or let go
// meanwhile (every SQLite connection takes and lets go of several on the
// ledger) shifts the list under the walk, and an entry can be skipped —
// a held writer lock read as free, its live session ended as an orphan
// (16 plain Codex sessions at once: 1 in ~30 runs). A lock not found is
// looked for again before it counts as free; a skip twice running on one
// entry has not been seen.
func lockHolder(path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for range lockReads {
		data, err := readLocks()
		if err != nil {
			return 0, false
		}
		if pid, held := holderIn(string(data), ino); held {
			return pid, true
		}
	}
	return 0, false
}

// readLocks reads /proc/locks (a test reads a list that moves).
var readLocks = func() ([]byte, error) { return os.ReadFile("/proc/locks") }

// lockReads is how many times a lock not found in /proc/locks is looked
// for before it counts as free.
const lockReads = 3

// holderIn finds the lock on inode ino (":<inode>") in /proc/locks' text.
func holderIn(locks, ino string) (int, bool) {
	for _, l := range strings.Split(locks, "\n") {
		fs := strings.Fields(l)
		for i, f := range fs {
			if strings.Count(f, ":") == 2 && strings.HasSuffix(f, ino) {
				pid := 0
				if i > 0 {
					pid, _ = strconv.Atoi(fs[i-1])
				}
				return max(pid, 0), true
			}
		}
	}
	return 0, false
}
