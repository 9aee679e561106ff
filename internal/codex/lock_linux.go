package codex

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// heldLock reads /proc/locks for a lock on path's inode: Linux keeps
// flock(2) locks apart from fcntl(2) ones, so F_GETLK would not see
// Codex's; /proc/locks lists both.
func heldLock(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false
	}
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for _, l := range strings.Split(string(data), "\n") {
		for _, f := range strings.Fields(l) {
			if strings.Count(f, ":") == 2 && strings.HasSuffix(f, ino) {
				return true
			}
		}
	}
	return false
}
