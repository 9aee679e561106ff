package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return parseStat(pid, string(data))
}

// OpenFiles lists the paths pid's open descriptors point to.
func OpenFiles(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "/") {
			out = append(out, target)
		}
	}
	return out
}
