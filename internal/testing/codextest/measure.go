package codextest

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ms is the p-th percentile of ds (50: the median), in milliseconds; ds is
// sorted in place. The one figure the benchmarks report.
func Ms(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, len(ds)*p/100)].Microseconds()) / 1000
}

// StatusKB reads one kB field of /proc/<pid>/status ("VmRSS:", "VmHWM:"),
// in bytes; 0 when the process or the field is gone.
func StatusKB(pid int, key string) int64 {
	v, _ := StatusField(pid, key)
	kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	return kb << 10
}

// StatusField is one field of Linux's /proc/<pid>/status ("VmRSS:",
// "SigIgn:"), trimmed; false when the process, the file (another system)
// or the field is not there.
func StatusField(pid int, key string) (string, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// CountIn counts text in the bytes of the files at paths (a missing file
// holds none): "gone means gone from the bytes", e.g. a database with its
// -wal and -shm.
func CountIn(text string, paths ...string) int {
	n := 0
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		n += bytes.Count(data, []byte(text))
	}
	return n
}
