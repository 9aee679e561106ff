package codextest

import (
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
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
