package codex

import (
	"golang.org/x/sys/unix"
)

// lockHolder asks fcntl(F_GETLK) whether a write lock on all of path
// would be blocked, and by which pid. It only asks — it takes nothing. On
// macOS flock(2) and fcntl(2) locks live in one list per vnode and F_GETLK
// walks all of it (xnu bsd/kern/kern_lockf.c: lf_advlock's F_GETLK →
// lf_getblock, which skips only the caller's own locks), so Codex's flock
// is seen; its l_pid is the locker's, or -1 for a flock (then 0 here).
func lockHolder(path string) (int, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk); err != nil {
		return 0, false
	}
	return max(int(lk.Pid), 0), lk.Type != unix.F_UNLCK
}
