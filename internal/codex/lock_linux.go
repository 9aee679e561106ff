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
func lockHolder(path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, false
	}
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for _, l := range strings.Split(string(data), "\n") {
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
