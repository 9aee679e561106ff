package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ReadStat reads what the kernel says of pid through sysctl kern.proc.pid
// (the kinfo_proc of <sys/sysctl.h>, as ps(1) reads it): no /proc on macOS.
func ReadStat(pid int) (Stat, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Stat{}, fmt.Errorf("sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if int(k.Proc.P_pid) != pid {
		return Stat{}, fmt.Errorf("sysctl kern.proc.pid.%d: no such process", pid)
	}
	st := Stat{PID: pid, Comm: unix.ByteSliceToString(k.Proc.P_comm[:]), PPID: int(k.Eproc.Ppid), TPGID: int(k.Eproc.Tpgid)}
	st.StartTime = uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec)
	st.Exiting = k.Proc.P_flag&pWeXit != 0
	// p_stat of <sys/proc.h>: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5.
	switch k.Proc.P_stat {
	case 4:
		st.State = 'T'
	case 5:
		st.State = 'Z'
	case 2:
		st.State = 'R'
	default:
		st.State = 'S'
	}
	return st, nil
}

// OpenFiles lists the paths pid's open descriptors point to: nothing on
// macOS, where only libproc (cgo) or lsof(8) (a process per question)
// tells; cx learns a Codex's threads from its hooks, its logs database
// and its thread writer locks there.
func OpenFiles(pid int) []string { return nil }

// pWeXit is P_WEXIT of <sys/proc.h>: the process is working on exiting.
const pWeXit = 0x00002000

// killPending: macOS does not say through sysctl; P_WEXIT covers a
// process past the start of its exit.
func killPending(int) bool { return false }

// Args is pid's command line (nil when it cannot be read), from sysctl
// kern.procargs2 as ps(1) reads it: argc (int32), the executable's path,
// NUL padding, then argc NUL-terminated arguments.
func Args(pid int) []string {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(b) < 4 {
		return nil
	}
	argc := int(int32(b[0]) | int32(b[1])<<8 | int32(b[2])<<16 | int32(b[3])<<24)
	rest := b[4:]
	i := 0
	for i < len(rest) && rest[i] != 0 { // the executable's path
		i++
	}
	for i < len(rest) && rest[i] == 0 {
		i++
	}
	var args []string
	for len(args) < argc && i < len(rest) {
		j := i
		for j < len(rest) && rest[j] != 0 {
			j++
		}
		args = append(args, string(rest[i:j]))
		i = j + 1
	}
	return args
}
