package readmodel

import (
	"fmt"
	"io"
	"time"

	"cx/internal/cli"
	"cx/internal/ledger"
)

// SweepView is a sweep's result (lifecycle's SweepNow) as `cx ctl sweep`
// prints it.
type SweepView struct {
	Orphans, Ended, Jobs, Recovered int
	// InProgress are the jobs another process still held when the sweep
	// stopped waiting for them, after Waited.
	InProgress []JobView
	Waited     time.Duration
}

// HeldJobs are jobs another worker holds, as a sweep shows them (with who
// holds each).
func HeldJobs(jobs []ledger.Job) []JobView {
	out := []JobView{}
	for _, j := range jobs {
		v := Job(j)
		v.LeaseOwner = j.LeaseOwner
		out = append(out, v)
	}
	return out
}

// View is the sweep as `cx ctl sweep --json` prints it.
func (r SweepView) View() map[string]any {
	inProgress := r.InProgress
	if inProgress == nil {
		inProgress = []JobView{}
	}
	return map[string]any{"orphan_runs": r.Orphans, "generations_ended": r.Ended, "jobs_worked": r.Jobs, "sessions_recovered": r.Recovered,
		"waited_ms": r.Waited.Milliseconds(), "in_progress": inProgress}
}

// WriteText is what `cx ctl sweep` prints of r.
func (r SweepView) WriteText(w io.Writer) {
	fmt.Fprintf(w, "orphan runs: %d, generations ended: %d, jobs worked: %d\n", r.Orphans, r.Ended, r.Jobs)
	if r.Recovered > 0 {
		fmt.Fprintf(w, "recorded %s a run could not record (from their rollouts)\n", cli.Count(r.Recovered, "session"))
	}
	if n := len(r.InProgress); n > 0 {
		fmt.Fprintf(w, "%d job(s) still in progress elsewhere after %s (`cx ctl sweep` again, or `cx ctl status`):\n", n, r.Waited.Round(time.Second))
		for _, j := range r.InProgress {
			fmt.Fprintf(w, "  #%d %s %s g%d → %s, by %s until %s\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Target(), LeaseHolder(j.LeaseOwner), *j.LeaseUntil)
		}
	}
}

// WaitingLine is a sweep's progress for a terminal: one line, rewritten in
// place, on the jobs it waits for.
func WaitingLine(w io.Writer) func([]ledger.Job, time.Duration) {
	return func(waiting []ledger.Job, waited time.Duration) {
		j := HeldJobs(waiting[:1])[0]
		fmt.Fprintf(w, "\r\033[Kwaiting %ds for %d job(s) in progress elsewhere: #%d %s %s → %s (%s)", int(waited.Seconds()), len(waiting), j.ID, j.Kind, j.SessionID, j.Target(), LeaseHolder(j.LeaseOwner))
	}
}
