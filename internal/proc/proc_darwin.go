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
