package codex

import (
	"fmt"
	"slices"

	"cx/internal/proc"
)

// hookShells are processes that may stand between Codex and its hook
// command (Codex runs the command through the user's shell, HookShell;
// `env` may prefix it).
var hookShells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ash": true, "ksh": true, "mksh": true,
	"fish": true, "tcsh": true, "csh": true, "env": true}

// IsHookShell reports whether a process of that name may stand between
// Codex and its hook command.
func IsHookShell(comm string) bool { return hookShells[comm] }

// Process is a Codex process, known by its pid and start time; Daemon: an
// app-server (the TUI's background daemon holds every window's threads,
// side by side).
type Process struct {
	PID    int
	Start  uint64
	Daemon bool
}

func (p Process) String() string { return fmt.Sprintf("%d@%d", p.PID, p.Start) }

// HookProcess is the Codex process a hook process runs under: its parent
// chain (from ppid) past any shell. Its PID is 0 when that is unknown.
func HookProcess(ppid int) Process {
	if ppid <= 1 {
		return Process{}
	}
	for st := range proc.Ancestors(ppid, 6) {
		if IsHookShell(st.Comm) {
			continue
		}
		return Process{PID: st.PID, Start: st.StartTime, Daemon: slices.Contains(proc.Args(st.PID), "app-server")}
	}
	return Process{}
}
