package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"cx/internal/checkpoint"
	"cx/internal/config"
	"cx/internal/fsutil"
	"cx/internal/ledger"
	"cx/lifecycle"
)

// openManager opens the ledger for a ctl command.
func (a *app) openManager(ctx context.Context) (*lifecycle.Manager, int) {
	cfg, err := a.loadConfig()
	if err != nil {
		a.errorf("%v", err)
		return nil, 1
	}
	m, err := lifecycle.Open(ctx, cfg, lifecycle.Options{})
	if err != nil {
		a.errorf("%v", err)
		return nil, 1
	}
	return m, 0
}

var rfc3339, rfc3339Ptr = lifecycle.RFC3339, lifecycle.RFC3339Ptr

func (a *app) printJSON(v any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // a <cx-context> block reads as it is
	_ = enc.Encode(v)
}

// sessionJSON is one session as `sessions --json` prints it.
type sessionJSON = lifecycle.SessionView

func (a *app) ctlSessions(ctx context.Context, args []string) int {
	var asJSON bool
	if _, code, ok := a.args(ctlArgs{name: "sessions", define: jsonFlag(&asJSON)}, args); !ok {
		return code
	}
	m, code := a.openManager(ctx)
	if m == nil {
		return code
	}
	defer m.Close()
	sessions, err := m.DB.Sessions(ctx)
	if err != nil {
		a.errorf("sessions: %v", err)
		return 1
	}
	out := make([]sessionJSON, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, m.ViewSession(ctx, s))
	}
	if asJSON {
		a.printJSON(out)
		return 0
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tGEN\tCOMMITS\tTURNS\tEND\tLAST SEEN\tCWD")
	for _, s := range out {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", s.ID, s.Status, s.Generation, s.Commits, s.TotalTurns, s.EndReason, s.LastSeen, s.Cwd)
	}
	_ = tw.Flush()
	return 0
}

type jobJSON struct {
	ID          int64   `json:"id"`
	Kind        string  `json:"kind"`
	SessionID   string  `json:"session_id"`
	Generation  int     `json:"generation"`
	Sink        string  `json:"sink"`
	State       string  `json:"state"`
	Attempts    int     `json:"attempts"`
	NextAttempt string  `json:"next_attempt_at"`
	LastError   string  `json:"last_error"`
	LeaseUntil  *string `json:"lease_until"`
	UpdatedAt   string  `json:"updated_at"`
}

func toJobJSON(j ledger.Job) jobJSON {
	return jobJSON{ID: j.ID, Kind: j.Kind, SessionID: j.SessionID, Generation: j.Generation, Sink: j.Sink, State: j.State,
		Attempts: j.Attempts, NextAttempt: rfc3339(j.NextAttemptAt), LastError: j.LastError, LeaseUntil: rfc3339Ptr(j.LeaseUntil),
		UpdatedAt: rfc3339(j.UpdatedAt)}
}

type runJSON struct {
	ID         string   `json:"id"`
	PID        int      `json:"pid"`
	CodexPID   int      `json:"codex_pid"`
	Version    string   `json:"codex_version"`
	Sinks      []string `json:"sinks"`
	Cwd        string   `json:"cwd"`
	Foreground string   `json:"foreground_session"`
	StartedAt  string   `json:"started_at"`
	EndedAt    *string  `json:"ended_at"`
	ExitCode   *int     `json:"exit_code"`
	EndReason  string   `json:"end_reason"`
}

func toRunJSON(r ledger.Run) runJSON {
	return runJSON{ID: r.ID, PID: r.PID, CodexPID: r.CodexPID, Version: r.CodexVersion, Sinks: r.Sinks, Cwd: r.Cwd,
		Foreground: r.Foreground, StartedAt: rfc3339(r.StartedAt), EndedAt: rfc3339Ptr(r.EndedAt), ExitCode: r.ExitCode, EndReason: r.EndReason}
}

func (a *app) ctlStatus(ctx context.Context, args []string) int {
	var asJSON bool
	if _, code, ok := a.args(ctlArgs{name: "status", define: jsonFlag(&asJSON)}, args); !ok {
		return code
	}
	m, code := a.openManager(ctx)
	if m == nil {
		return code
	}
	defer m.Close()
	runs, err := m.DB.Runs(ctx, true)
	if err != nil {
		a.errorf("status: %v", err)
		return 1
	}
	sessions, _ := m.DB.Sessions(ctx)
	jobs, _ := m.DB.Jobs(ctx, ledger.JobPending, ledger.JobLeased, ledger.JobParked)
	out := struct {
		Ledger       string         `json:"ledger"`
		Runs         []runJSON      `json:"runs"`
		LiveSessions []sessionJSON  `json:"live_sessions"`
		Pending      []jobJSON      `json:"pending_jobs"`
		Parked       []jobJSON      `json:"parked_jobs"`
		Counts       map[string]int `json:"counts"`
	}{Ledger: m.DB.Path, Runs: []runJSON{}, LiveSessions: []sessionJSON{}, Pending: []jobJSON{}, Parked: []jobJSON{}, Counts: map[string]int{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, toRunJSON(r))
	}
	for _, s := range sessions {
		out.Counts["sessions_"+s.Status]++
		if s.Status == ledger.Live {
			out.LiveSessions = append(out.LiveSessions, m.ViewSession(ctx, s))
		}
	}
	for _, j := range jobs {
		out.Counts["jobs_"+j.State]++
		if j.State == ledger.JobParked {
			out.Parked = append(out.Parked, toJobJSON(j))
		} else {
			out.Pending = append(out.Pending, toJobJSON(j))
		}
	}
	if asJSON {
		a.printJSON(out)
		return 0
	}
	fmt.Fprintf(a.stdout, "ledger: %s\n", out.Ledger)
	fmt.Fprintf(a.stdout, "runs: %d running\n", len(out.Runs))
	for _, r := range out.Runs {
		fmt.Fprintf(a.stdout, "  %s pid %d codex %d (%s) sinks %v since %s\n", r.ID, r.PID, r.CodexPID, r.Version, r.Sinks, r.StartedAt)
	}
	fmt.Fprintf(a.stdout, "live sessions: %d\n", len(out.LiveSessions))
	for _, s := range out.LiveSessions {
		fmt.Fprintf(a.stdout, "  %s g%d turns %d run %s\n", s.ID, s.Generation, s.Turns, s.RunID)
	}
	fmt.Fprintf(a.stdout, "pending jobs: %d\n", len(out.Pending))
	for _, j := range out.Pending {
		fmt.Fprintf(a.stdout, "  #%d %s %s g%d → %s (%s, attempts %d) %s\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Sink, j.State, j.Attempts, j.LastError)
	}
	fmt.Fprintf(a.stdout, "parked jobs: %d\n", len(out.Parked))
	for _, j := range out.Parked {
		fmt.Fprintf(a.stdout, "  #%d %s %s g%d → %s after %d attempts: %s (cx ctl retry %d)\n", j.ID, j.Kind, j.SessionID, j.Generation, j.Sink, j.Attempts, j.LastError, j.ID)
	}
	return 0
}

func (a *app) ctlShow(ctx context.Context, args []string) int {
	var asJSON bool
	pos, code, ok := a.args(ctlArgs{name: "show", synopsis: "<session>", min: 1, max: 1, define: jsonFlag(&asJSON)}, args)
	if !ok {
		return code
	}
	m, code := a.openManager(ctx)
	if m == nil {
		return code
	}
	defer m.Close()
	id := pos[0]
	s, err := m.DB.Session(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		a.errorf("no session %s in the ledger", id)
		return 1
	}
	if err != nil {
		a.errorf("show %s: %v", id, err)
		return 1
	}
	gens, _ := m.DB.Generations(ctx, id)
	events, _ := m.DB.Events(ctx, id)
	archives, _ := m.DB.Archives(ctx, id)
	allJobs, _ := m.DB.Jobs(ctx)
	type genJSON struct {
		Generation  int     `json:"generation"`
		Status      string  `json:"status"`
		EndReason   string  `json:"end_reason"`
		Turns       int     `json:"turns"`
		ExitStatus  *int    `json:"exit_status"`
		EndedAt     string  `json:"ended_at"`
		CommittedAt *string `json:"committed_at"`
	}
	type eventJSON struct {
		At     string `json:"at"`
		Kind   string `json:"kind"`
		RunID  string `json:"run_id,omitempty"`
		Detail string `json:"detail"`
	}
	type archiveJSON struct {
		Generation int             `json:"generation"`
		StoredAt   string          `json:"stored_at"`
		Turns      json.RawMessage `json:"turns"`
		Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
		Continuity string          `json:"continuity,omitempty"`
	}
	out := struct {
		Session     sessionJSON   `json:"session"`
		Generations []genJSON     `json:"generations"`
		Jobs        []jobJSON     `json:"jobs"`
		Archives    []archiveJSON `json:"archives"`
		Events      []eventJSON   `json:"events"`
	}{Session: m.ViewSession(ctx, s), Generations: []genJSON{}, Jobs: []jobJSON{}, Archives: []archiveJSON{}, Events: []eventJSON{}}
	for _, g := range gens {
		out.Generations = append(out.Generations, genJSON{g.Generation, g.Status, g.EndReason, g.Turns, g.ExitStatus, rfc3339(g.EndedAt), rfc3339Ptr(g.CommittedAt)})
	}
	for _, j := range allJobs {
		if j.SessionID == id {
			out.Jobs = append(out.Jobs, toJobJSON(j))
		}
	}
	for _, ar := range archives {
		aj := archiveJSON{Generation: ar.Generation, StoredAt: rfc3339(ar.StoredAt), Turns: json.RawMessage(ar.Turns), Continuity: ar.Continuity}
		if json.Valid([]byte(ar.Checkpoint)) {
			aj.Checkpoint = json.RawMessage(ar.Checkpoint)
		}
		out.Archives = append(out.Archives, aj)
	}
	for _, e := range events {
		out.Events = append(out.Events, eventJSON{rfc3339(e.At), e.Kind, e.RunID, e.Detail})
	}
	if asJSON {
		a.printJSON(out)
		return 0
	}
	ss := out.Session
	runID := ss.RunID
	if runID == "" {
		runID = "none (Codex ran without cx)"
	}
	fmt.Fprintf(a.stdout, "session %s\n  status %s (generation %d, %d committed)  end reason %q\n  run %s  sinks %v\n  rollout %s\n  cwd %s\n  turns %d in this generation, %d in all; %d interrupted, %d compactions, %d unreadable lines\n",
		ss.ID, ss.Status, ss.Generation, ss.Commits, ss.EndReason, runID, ss.Sinks, ss.TranscriptPath, ss.Cwd, ss.Turns, ss.TotalTurns, ss.Interrupted, ss.Compactions, ss.Placeholders)
	for _, g := range out.Generations {
		fmt.Fprintf(a.stdout, "  g%d %s (%s) turns %d ended %s\n", g.Generation, g.Status, g.EndReason, g.Turns, g.EndedAt)
	}
	for _, j := range out.Jobs {
		line := fmt.Sprintf("  job #%d %s g%d → %s: %s (attempts %d)", j.ID, j.Kind, j.Generation, j.Sink, j.State, j.Attempts)
		if j.LastError != "" {
			line += " " + j.LastError
		}
		fmt.Fprintln(a.stdout, line)
	}
	for _, ar := range out.Archives {
		var turns []map[string]any
		_ = json.Unmarshal(ar.Turns, &turns)
		fmt.Fprintf(a.stdout, "  archive g%d: %d turns (stored %s)\n", ar.Generation, len(turns), ar.StoredAt)
		for _, t := range turns {
			fmt.Fprintf(a.stdout, "    › %s\n", oneLine(fmt.Sprint(t["user"]), 100))
		}
	}
	if n := len(out.Archives); n > 0 && len(out.Archives[n-1].Checkpoint) > 0 {
		var cp checkpoint.Checkpoint
		if json.Unmarshal(out.Archives[n-1].Checkpoint, &cp) == nil {
			fmt.Fprintf(a.stdout, "\ncheckpoint (generation %d):\n%s", out.Archives[n-1].Generation, checkpoint.View(cp, checkpoint.DefaultViewCaps, nil))
		}
	}
	return 0
}

func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

func (a *app) ctlCommit(ctx context.Context, args []string) int {
	var asJSON bool
	pos, code, ok := a.args(ctlArgs{name: "commit", synopsis: "<session>", min: 1, max: 1, define: jsonFlag(&asJSON)}, args)
	if !ok {
		return code
	}
	id := pos[0]
	m, code := a.openManager(ctx)
	if m == nil {
		return code
	}
	defer m.Close()
	if _, err := m.DB.Session(ctx, id); errors.Is(err, ledger.ErrNotFound) {
		a.errorf("no session %s in the ledger", id)
		return 1
	} else if err != nil {
		a.errorf("commit %s: %v", id, err)
		return 1
	}
	ended, err := m.Commit(ctx, id)
	if err != nil {
		a.errorf("commit %s: %v", id, err)
		return 1
	}
	s, _ := m.DB.Session(ctx, id)
	if asJSON {
		a.printJSON(struct {
			Ended   bool        `json:"ended"`
			Reason  string      `json:"reason,omitempty"`
			Session sessionJSON `json:"session"`
		}{ended, map[bool]string{true: lifecycle.ReasonManual}[ended], m.ViewSession(ctx, s)})
		return 0
	}
	if ended {
		fmt.Fprintf(a.stdout, "%s: generation %d ended (%s), status %s\n", s.ID, s.Generation, lifecycle.ReasonManual, s.Status)
	} else {
		fmt.Fprintf(a.stdout, "%s: nothing live to end (status %s, generation %d)\n", s.ID, s.Status, s.Generation)
	}
	return 0
}

func (a *app) ctlSweep(ctx context.Context, args []string) int {
	var background, asJSON bool
	if _, code, ok := a.args(ctlArgs{name: "sweep", define: func(fs *flag.FlagSet) {
		fs.BoolVar(&background, "background", false, "run quietly as the single background sweeper")
		jsonFlag(&asJSON)(fs)
	}}, args); !ok {
		return code
	}
	cfg, err := config.Load(a.getenv)
	if err != nil && !background {
		a.errorf("%v", err)
		return 1
	}
	if background {
		unlock, err := fsutil.Lock(sweepLockPath(cfg.Home), false)
		if err != nil {
			return 0 // another sweeper is at work
		}
		defer unlock()
	}
	m, err := lifecycle.Open(ctx, cfg, lifecycle.Options{})
	if err != nil {
		if !background {
			a.errorf("%v", err)
		}
		return 1
	}
	defer m.Close()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	res, err := m.Sweep(sctx)
	if err != nil {
		m.Log.Printf("sweep: %v", err)
		if !background {
			a.errorf("sweep: %v", err)
		}
		return 1
	}
	if background {
		return 0
	}
	if asJSON {
		a.printJSON(map[string]int{"orphan_runs": res.Orphans, "generations_ended": res.Ended, "jobs_worked": res.Jobs, "sessions_recovered": res.Recovered})
		return 0
	}
	fmt.Fprintf(a.stdout, "orphan runs: %d, generations ended: %d, jobs worked: %d\n", res.Orphans, res.Ended, res.Jobs)
	if res.Recovered > 0 {
		fmt.Fprintf(a.stdout, "recorded %d session(s) a run could not record (from their rollouts)\n", res.Recovered)
	}
	return 0
}

func (a *app) ctlRetry(ctx context.Context, args []string) int {
	var all, asJSON bool
	var ids []int64
	spec := ctlArgs{name: "retry", synopsis: "<job id>…", min: 0, max: -1, define: func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "every parked job")
		jsonFlag(&asJSON)(fs)
	}, check: func(pos []string) error {
		if all == (len(pos) > 0) {
			return errors.New("name job ids or --all (one of the two)")
		}
		for _, s := range pos {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%q is not a job id", s)
			}
			ids = append(ids, id)
		}
		return nil
	}}
	if _, code, ok := a.args(spec, args); !ok {
		return code
	}
	m, code := a.openManager(ctx)
	if m == nil {
		return code
	}
	defer m.Close()
	n, err := m.Retry(ctx, ids, all)
	if err != nil {
		a.errorf("retry: %v", err)
		return 1
	}
	if len(ids) > 0 && n == 0 {
		a.errorf("retry: none of the jobs named is parked (see `cx ctl status`)")
		return 1
	}
	worked := 0
	if n > 0 {
		if worked, err = m.WorkOutbox(ctx, nil); err != nil {
			a.errorf("retry: %v", err)
			return 1
		}
	}
	if asJSON {
		a.printJSON(map[string]int{"requeued": n, "jobs_worked": worked})
		return 0
	}
	fmt.Fprintf(a.stdout, "%d parked job(s) back in the outbox\n", n)
	return 0
}

// jsonFlag defines --json.
func jsonFlag(p *bool) func(*flag.FlagSet) {
	return func(fs *flag.FlagSet) { fs.BoolVar(p, "json", false, "print one JSON document") }
}
