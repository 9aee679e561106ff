// Package proc reads what cx needs to know about processes: start times
// (to tell a live process from a reused pid), parents (to check which
// process a hook came from), CPU time, and open files (to learn which
// sessions a Codex process holds); and it starts cx detached (the
// background sweeper, the hook host).
//
// Where the facts come from differs by system, and only that lives in a
// platform file: /proc on Linux (proc_linux.go), sysctl kern.proc on macOS
// (proc_darwin.go). Everything built on them is shared.
package proc

import (
	"fmt"
	"iter"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stat is what cx knows of a process.
type Stat struct {
	PID   int
	Comm  string
	State byte // 'Z' zombie, 'T' stopped, as in /proc/<pid>/stat
	PPID  int
	// StartTime is when the process started, in units of the system (clock
	// ticks after boot on Linux, microseconds since the epoch on macOS):
	// with the pid, a process identity.
	StartTime uint64
	// CPUTicks is user and system time so far, in clock ticks (Linux only:
	// macOS does not say it through sysctl; 0 there).
	CPUTicks uint64
	// TPGID is the foreground process group of the process's controlling
	// terminal (-1 or 0 when it has none).
	TPGID int
	// Exiting: the process is on its way out — killed (SIGKILL pending) or
	// past the start of its exit — though the kernel has not finished it
	// (a thread in D state can hold it there for a while). Linux only.
	Exiting bool
}

// pfExiting is the kernel's PF_EXITING task flag (/proc/<pid>/stat field 9).
const pfExiting = 0x4

// parseStat parses a Linux /proc/<pid>/stat line.
func parseStat(pid int, s string) (Stat, error) {
	// comm is in parentheses and may contain spaces or parentheses itself.
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open || close+2 >= len(s) {
		return Stat{}, fmt.Errorf("parse /proc/%d/stat: malformed", pid)
	}
	st := Stat{PID: pid, Comm: s[open+1 : close]}
	fields := strings.Fields(s[close+2:])
	// fields[0] is state (field 3); ppid is field 4; starttime is field 22.
	if len(fields) < 20 {
		return Stat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	st.State = fields[0][0]
	flags, _ := strconv.ParseUint(fields[6], 10, 64) // field 9
	st.Exiting = flags&pfExiting != 0
	st.PPID, _ = strconv.Atoi(fields[1])
	st.TPGID, _ = strconv.Atoi(fields[5]) // field 8
	st.StartTime, _ = strconv.ParseUint(fields[19], 10, 64)
	utime, _ := strconv.ParseUint(fields[11], 10, 64) // field 14
	stime, _ := strconv.ParseUint(fields[12], 10, 64) // field 15
	st.CPUTicks = utime + stime
	return st, nil
}

// Alive reports whether pid is running (not a zombie) and, when start is
// non-zero, is the same process that had that start time.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := ReadStat(pid)
	if err != nil || st.State == 'Z' || st.State == 'X' || st.Exiting || killPending(pid) {
		return false // gone, a zombie, or being killed: not running
	}
	return start == 0 || st.StartTime == start
}

// StartTime is pid's start time, 0 if it cannot be read.
func StartTime(pid int) uint64 {
	st, err := ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.StartTime
}

// Ancestors yields pid's parent chain, nearest first, up to n processes,
// each read only when the loop asks for it: a hook's Codex is its shell's
// parent, two reads of n (the hook host reads a chain for every hook).
func Ancestors(pid, n int) iter.Seq[Stat] {
	return func(yield func(Stat) bool) {
		for i := 0; i < n && pid > 1; i++ {
			st, err := ReadStat(pid)
			if err != nil || !yield(st) {
				return
			}
			pid = st.PPID
		}
	}
}

// StartDetached starts cx itself with args in a session of its own (it
// outlives the caller and no terminal signal reaches it) and lets it go.
// For a caller that ends soon (a hook's process): its child, once it ends,
// is reaped by the system.
func StartDetached(args ...string) error {
	cmd, err := selfCommand(args...)
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %v: %w", cmd.Args, err)
	}
	return cmd.Process.Release()
}

// StartApart starts cx itself with args as StartDetached does, but as no
// child of the caller's: a shell starts it in the background and leaves,
// waited for here. For a caller that lives on (a run's cx): a child that
// ended first would stay a zombie under it, and what walks the caller's
// children (a daemon, a test looking for Codex) would find it there. A
// shell is what leaves a child alike on Linux and macOS (Go does not fork
// without exec): a few ms, once a start.
func StartApart(args ...string) error {
	cmd, err := selfCommand(args...)
	if err != nil {
		return err
	}
	cmd.Args = append([]string{"/bin/sh", "-c", `"$0" "$@" &`}, cmd.Args...)
	cmd.Path = "/bin/sh"
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start %v: %w", cmd.Args[3:], err)
	}
	return nil
}

// selfCommand is cx itself with args, in a session of its own, with this
// process's environment and no input or output.
func selfCommand(args ...string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the cx binary: %w", err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, nil
}

// SelfCPU is the CPU time (user and system) this process has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
