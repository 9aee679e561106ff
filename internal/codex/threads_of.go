package codex

import (
	"os"
	"path/filepath"
	"time"

	"cx/internal/proc"
	"cx/internal/rollout"
)

// Threads discovers the threads one Codex process holds while it runs:
// the thread lock files (0.169) and rollouts among its open files, and its
// rows in Codex's log database (0.128). A thread logged there is a session
// only once Codex keeps its lock file or rollout on disk: Codex's own
// helper threads (0.169's title generation) are logged too.
type Threads struct {
	Home  string    // CODEX_HOME
	Since time.Time // the process's start: threads born before are not its
	Logs  *LogWatch
	// ByLocks: Codex keeps writer locks (KeepsWriterLocks), so its open
	// lock files name every thread it has loaded and the log database is
	// not read: it holds every Codex's rows of the home, read by every
	// look of every cx beside them, and adds only threads gone before a
	// look saw their lock, which the exit finds (OwnThreads).
	ByLocks bool
	// candidates are thread ids from the log database not yet seen on
	// disk.
	candidates map[string]bool
}

// Look returns the threads the process pid holds now (id → rollout path,
// "" when it has none yet) that known does not already know, reading its
// open files when withFDs.
func (d *Threads) Look(pid int, withFDs bool, known func(id string) bool) map[string]string {
	found := map[string]string{}
	if withFDs {
		for _, f := range proc.OpenFiles(pid) {
			if id, ok := LockFileThread(f); ok {
				if _, ok := found[id]; !ok {
					found[id] = ""
				}
			}
			if id := RolloutID(f); id != "" {
				found[id] = f
			}
		}
	}
	if !d.ByLocks {
		for _, id := range d.Logs.Threads(pid) {
			if _, ok := found[id]; !ok && !known(id) {
				d.Again(id)
			}
		}
	}
	if len(d.candidates) > 0 {
		// A candidate is a session once Codex keeps something of it on disk:
		// one listing of the day folders and the locks for all of them.
		rollouts, locks := RolloutsSince(d.Home, d.Since), ThreadLocks(d.Home)
		for id := range d.candidates {
			_, seen := found[id]
			path, hasRollout := rollouts[id]
			switch {
			case seen || known(id):
			case hasRollout:
				found[id] = path
			case locks[id]:
				found[id] = ""
			default:
				continue // a helper thread of Codex's, or not on disk yet
			}
			delete(d.candidates, id)
		}
	}
	return found
}

// Again makes id a candidate: logged but not yet seen on disk, or found
// but not recorded (the next look finds it anew).
func (d *Threads) Again(id string) {
	if d.candidates == nil {
		d.candidates = map[string]bool{}
	}
	d.candidates[id] = true
}

// OwnThreads finds, once a Codex process has exited, the threads it
// created and wrote: rollouts of threads born (their ids are UUIDv7s)
// since started, that no other process holds a writer lock on and no other
// process logged, started in cwd (when cwd is known). known(id) leaves
// out threads recorded elsewhere (nil: none). Used by a run's exit, which
// learns what discovery missed, and by a run that could not open the
// ledger, to name its threads in its breadcrumb.
func OwnThreads(codexHome string, pid int, started time.Time, cwd string, logs *LogWatch, skip func(id string) bool) map[string]string {
	now := time.Now()
	found := map[string]string{}
	for id, path := range RolloutsSince(codexHome, started) {
		if skip != nil && skip(id) {
			continue
		}
		born, ok := rollout.IDTime(id)
		if !ok || born.Before(started.Add(-clockSlack)) || born.After(now.Add(clockSlack)) {
			continue
		}
		if ThreadLocked(codexHome, id) || (logs != nil && logs.LoggedByOther(id, pid)) {
			continue // another Codex's, and live
		}
		meta, err := rollout.ReadMeta(path)
		if err != nil || meta.ID != id || (cwd != "" && filepath.Clean(meta.Cwd) != filepath.Clean(cwd)) {
			continue
		}
		found[id] = path
	}
	return found
}

// clockSlack is how far a thread id's time may stray from this process's
// clock readings (both are the same clock; milliseconds round).
const clockSlack = time.Second

// RolloutFileLiveness judges whether Codex may still write the rollout at
// path (RolloutLiveness, its version read from the rollout, its age from
// the file); a rollout gone meanwhile (archived) is live: a later look.
func RolloutFileLiveness(home, id, path string, now time.Time, window time.Duration) Liveness {
	fi, err := os.Stat(path)
	if err != nil {
		return Liveness{Live: true}
	}
	meta, _ := rollout.ReadMeta(path) // no complete first line yet: judged by age
	return RolloutLiveness(home, id, meta.CLIVersion, fi.ModTime(), now, window)
}
