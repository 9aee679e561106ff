package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return parseStat(pid, string(data))
}

// OpenFiles lists the paths pid's open descriptors point to. Each link is
// read relative to the open fd directory into one buffer: a Codex holds a
// hundred descriptors and discovery looks at them on every look.
func OpenFiles(pid int) []string {
	dir, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil
	}
	fd := int(dir.Fd())
	buf := make([]byte, unix.PathMax)
	out := make([]string, 0, len(names))
	for _, name := range names {
		// Only a path names a file (not "socket:[…]", "pipe:[…]"); one that
		// fills the buffer was cut.
		if n, err := unix.Readlinkat(fd, name, buf); err == nil && n > 0 && n < len(buf) && buf[0] == '/' {
			out = append(out, string(buf[:n]))
		}
	}
	return out
}

// killPending reports whether a SIGKILL waits to be delivered to pid (its
// own or its thread group's pending set, /proc/<pid>/status SigPnd and
// ShdPnd): the process is as good as gone.
func killPending(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	return killPendingIn(string(data))
}

// killPendingIn is killPending of a /proc/<pid>/status text.
func killPendingIn(status string) bool {
	const sigkill = 1 << (9 - 1)
	for _, l := range strings.Split(status, "\n") {
		name, mask, ok := strings.Cut(l, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&sigkill != 0 {
			return true
		}
	}
	return false
}

// Args is pid's command line (nil when it cannot be read).
func Args(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}
