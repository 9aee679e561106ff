// Package readmodel is what `cx ctl status`, `sessions`, `show` and
// `commit` print: each shape declared once, with the JSON tags the
// commands print, shared by the commands, the end-to-end harness and the
// tests, read from the ledger and never written to it.
package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cx/internal/ledger"
	"cx/internal/rollout"
	"cx/internal/runproc"
)

// ErrNoSession is returned for a session the ledger does not know.
var ErrNoSession = errors.New("no such session in the ledger")

// NotFound reports whether err says a session is not in the ledger (as
// ErrNoSession, or as the ledger's own not-found of a session id).
func NotFound(err error) bool {
	return errors.Is(err, ErrNoSession) || errors.Is(err, ledger.ErrNotFound)
}

// SessionView is one session as `cx ctl sessions --json` prints it.
type SessionView struct {
	ID             string   `json:"id"`
	Status         string   `json:"status"`
	EndReason      string   `json:"end_reason"`
	RunID          string   `json:"run_id"`
	Generation     int      `json:"generation"`
	Commits        int      `json:"commits"`
	Turns          int      `json:"turns"`
	TotalTurns     int      `json:"total_turns"`
	TranscriptPath string   `json:"transcript_path"`
	Cwd            string   `json:"cwd"`
	Sinks          []string `json:"sinks"`
	Interrupted    int      `json:"interrupted_turns"`
	Compactions    int      `json:"compactions"`
	Placeholders   int      `json:"placeholders"`
	CreatedAt      string   `json:"created_at"`
	LastSeen       string   `json:"last_seen"`
	EndedAt        *string  `json:"ended_at"`
	// Forgotten: `cx ctl forget` took its words out; the ledger keeps that
	// its generations were committed.
	Forgotten bool `json:"forgotten,omitempty"`
	// Parent is the thread that spawned this one, for a subagent's thread
	// (Agent: the nickname Codex gave it); Children are the subagent
	// threads this one spawned (show only).
	Parent   string   `json:"parent,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	Children []string `json:"children,omitempty"`
}

// subagentOf is the parent and nickname a session's rollout names.
func subagentOf(s ledger.Session) (parent, agent string) {
	if s.Meta == "" {
		return "", ""
	}
	var m rollout.SessionMeta
	if json.Unmarshal([]byte(s.Meta), &m) != nil {
		return "", ""
	}
	return m.ParentID, m.Agent
}

// Latest is the first n sessions of a list (newest first) that are no
// subagent's, each with the subagents listed under it (n <= 0: all).
func Latest(in []SessionView, n int) []SessionView {
	if n <= 0 {
		return in
	}
	out, top := make([]SessionView, 0, min(len(in), n)), 0
	for _, s := range in {
		if s.Parent == "" || !slices.ContainsFunc(out, func(p SessionView) bool { return p.ID == s.Parent }) {
			if top == n {
				break
			}
			top++
		}
		out = append(out, s)
	}
	return out
}

// underParents orders sessions so that each subagent's thread follows its
// parent (children in the order they came); the rest keep their order.
func underParents(in []SessionView) []SessionView {
	present := map[string]bool{}
	for _, s := range in {
		present[s.ID] = true
	}
	children := map[string][]SessionView{}
	for _, s := range in {
		if s.Parent != "" && present[s.Parent] {
			children[s.Parent] = append(children[s.Parent], s)
		}
	}
	out := make([]SessionView, 0, len(in))
	var add func(s SessionView)
	add = func(s SessionView) {
		out = append(out, s)
		kids := children[s.ID]
		slices.Reverse(kids) // newest first in, oldest first under the parent
		for _, c := range kids {
			add(c)
		}
	}
	for _, s := range in {
		if s.Parent == "" || !present[s.Parent] {
			add(s)
		}
	}
	return out
}

// Session is the view of one ledger session.
func Session(ctx context.Context, db *ledger.DB, s ledger.Session) SessionView {
	forgotten, _ := db.Forgotten(ctx, s.ID)
	return view(ctx, db, s, forgotten)
}

func view(ctx context.Context, db *ledger.DB, s ledger.Session, forgotten bool) SessionView {
	commits, _ := db.Commits(ctx, s.ID)
	total, _ := db.TotalTurns(ctx, s.ID)
	sinks := s.Sinks
	if sinks == nil {
		sinks = []string{}
	}
	parent, agent := subagentOf(s)
	return SessionView{Forgotten: forgotten, Parent: parent, Agent: agent, ID: s.ID, Status: s.Status, EndReason: s.EndReason, RunID: s.RunID, Generation: s.Generation,
		Commits: commits, Turns: s.Turns, TotalTurns: total, TranscriptPath: s.TranscriptPath, Cwd: s.Cwd, Sinks: sinks,
		Interrupted: s.Interrupted, Compactions: s.Compactions, Placeholders: s.Placeholders,
		CreatedAt: RFC3339(s.CreatedAt), LastSeen: RFC3339(s.LastSeen), EndedAt: RFC3339Ptr(s.EndedAt)}
}

// JobView is one outbox job.
type JobView struct {
	ID          int64   `json:"id"`
	Kind        string  `json:"kind"`
	SessionID   string  `json:"session_id"`
	Generation  int     `json:"generation"`
	Sink        string  `json:"sink"`
	Detail      string  `json:"detail,omitempty"` // a job to no sink: what it is about (an end's reason)
	State       string  `json:"state"`
	Attempts    int     `json:"attempts"`
	NextAttempt string  `json:"next_attempt_at"`
	LastError   string  `json:"last_error"`
	LeaseUntil  *string `json:"lease_until"`
	// LeaseOwner is the worker holding it ("pid:<pid>:…"), where a sweep
	// says which job is in progress where.
	LeaseOwner string `json:"lease_owner,omitempty"`
	UpdatedAt  string `json:"updated_at"`
}

// Target is what the job goes to: its sink, or for a job to no sink what it
// is about (an end job: the end reason).
func (j JobView) Target() string {
	if j.Sink == "" {
		return j.Detail
	}
	return j.Sink
}

// Job is the view of one outbox job.
func Job(j ledger.Job) JobView {
	return JobView{ID: j.ID, Kind: j.Kind, SessionID: j.SessionID, Generation: j.Generation, Sink: j.Sink, Detail: j.Detail, State: j.State,
		Attempts: j.Attempts, NextAttempt: RFC3339(j.NextAttemptAt), LastError: j.LastError, LeaseUntil: RFC3339Ptr(j.LeaseUntil),
		UpdatedAt: RFC3339(j.UpdatedAt)}
}

// RunView is one supervised run.
type RunView struct {
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
	// State of a run not ended: "running", or "dead" — its cx is gone (pid
	// and start time, as the sweep judges), not yet swept — with
	// CodexAlive when its Codex still runs.
	State      string `json:"state,omitempty"`
	CodexAlive bool   `json:"codex_alive,omitempty"`
}

// StatusView is `cx ctl status`: what runs, what is live, what waits.
type StatusView struct {
	Ledger       string         `json:"ledger"`
	Runs         []RunView      `json:"runs"`
	LiveSessions []SessionView  `json:"live_sessions"`
	Pending      []JobView      `json:"pending_jobs"`
	Parked       []JobView      `json:"parked_jobs"`
	Counts       map[string]int `json:"counts"`
}

// Sessions is every session, most recently seen first.
func Sessions(ctx context.Context, db *ledger.DB) ([]SessionView, error) {
	sessions, err := db.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	forgotten, _ := db.ForgottenSessions(ctx)
	out := make([]SessionView, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, view(ctx, db, s, forgotten[s.ID]))
	}
	return underParents(out), nil
}

// Status is the state of the ledger now.
func Status(ctx context.Context, db *ledger.DB) (StatusView, error) {
	out := StatusView{Ledger: db.Path, Runs: []RunView{}, LiveSessions: []SessionView{}, Pending: []JobView{}, Parked: []JobView{}, Counts: map[string]int{}}
	runs, err := db.Runs(ctx, true)
	if err != nil {
		return out, err
	}
	for _, r := range runs {
		v := RunView{ID: r.ID, PID: r.PID, CodexPID: r.CodexPID, Version: r.CodexVersion, Sinks: r.Sinks, Cwd: r.Cwd,
			Foreground: r.Foreground, StartedAt: RFC3339(r.StartedAt), EndedAt: RFC3339Ptr(r.EndedAt), ExitCode: r.ExitCode, EndReason: r.EndReason, State: "running"}
		if r.EndedAt == nil && !runproc.CxAlive(r) {
			v.State = "dead"
			v.CodexAlive = runproc.CodexAlive(r)
		}
		out.Runs = append(out.Runs, v)
	}
	counts, _ := db.SessionCounts(ctx)
	for st, n := range counts {
		out.Counts["sessions_"+st] = n
	}
	live, _ := db.LiveSessions(ctx)
	for _, s := range live {
		out.LiveSessions = append(out.LiveSessions, Session(ctx, db, s))
	}
	jobs, _ := db.Jobs(ctx, ledger.JobPending, ledger.JobLeased, ledger.JobParked)
	for _, j := range jobs {
		out.Counts["jobs_"+j.State]++
		if j.State == ledger.JobParked {
			out.Parked = append(out.Parked, Job(j))
		} else {
			out.Pending = append(out.Pending, Job(j))
		}
	}
	return out, nil
}

// GenerationView is one ended generation.
type GenerationView struct {
	Generation  int     `json:"generation"`
	Status      string  `json:"status"`
	EndReason   string  `json:"end_reason"`
	Turns       int     `json:"turns"`
	ExitStatus  *int    `json:"exit_status"`
	EndedAt     string  `json:"ended_at"`
	CommittedAt *string `json:"committed_at"`
}

// EventView is one ledger event.
type EventView struct {
	At     string `json:"at"`
	Kind   string `json:"kind"`
	RunID  string `json:"run_id,omitempty"`
	Detail string `json:"detail"`
}

// ArchiveView is one archived generation (the local sink's record).
type ArchiveView struct {
	Generation int             `json:"generation"`
	StoredAt   string          `json:"stored_at"`
	Turns      json.RawMessage `json:"turns"`
	Checkpoint json.RawMessage `json:"checkpoint,omitempty"`
	Continuity string          `json:"continuity,omitempty"`
}

// ShowView is `cx ctl show`: one session whole.
type ShowView struct {
	Session     SessionView      `json:"session"`
	Generations []GenerationView `json:"generations"`
	Jobs        []JobView        `json:"jobs"`
	Archives    []ArchiveView    `json:"archives"`
	Events      []EventView      `json:"events"`
}

// Show is one session with its generations, jobs, archives and events.
func Show(ctx context.Context, db *ledger.DB, id string) (ShowView, error) {
	s, err := Lookup(ctx, db, id)
	if err != nil {
		return ShowView{}, err
	}
	out := ShowView{Session: Session(ctx, db, s), Generations: []GenerationView{}, Jobs: []JobView{}, Archives: []ArchiveView{}, Events: []EventView{}}
	if all, err := db.Sessions(ctx); err == nil {
		for i := len(all) - 1; i >= 0; i-- { // oldest first
			if p, _ := subagentOf(all[i]); p == id {
				out.Session.Children = append(out.Session.Children, all[i].ID)
			}
		}
	}
	gens, _ := db.Generations(ctx, id)
	for _, g := range gens {
		out.Generations = append(out.Generations, GenerationView{g.Generation, g.Status, g.EndReason, g.Turns, g.ExitStatus, RFC3339(g.EndedAt), RFC3339Ptr(g.CommittedAt)})
	}
	jobs, _ := db.SessionJobs(ctx, id)
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, Job(j))
	}
	archives, _ := db.Archives(ctx, id)
	for _, ar := range archives {
		av := ArchiveView{Generation: ar.Generation, StoredAt: RFC3339(ar.StoredAt), Turns: json.RawMessage(ar.Turns), Continuity: ar.Continuity}
		if json.Valid([]byte(ar.Checkpoint)) {
			av.Checkpoint = json.RawMessage(ar.Checkpoint)
		}
		out.Archives = append(out.Archives, av)
	}
	events, _ := db.Events(ctx, id)
	for _, e := range events {
		out.Events = append(out.Events, EventView{RFC3339(e.At), e.Kind, e.RunID, e.Detail})
	}
	return out, nil
}

// RFC3339 is how every time in cx's output is written (UTC); "" for none.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// RFC3339Ptr is RFC3339 for an optional time: nil stays null.
func RFC3339Ptr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := RFC3339(*t)
	return &s
}

// Lookup reads one session; ErrNoSession when the ledger has none.
func Lookup(ctx context.Context, db *ledger.DB, id string) (ledger.Session, error) {
	s, err := db.Session(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return s, fmt.Errorf("%w: %s", ErrNoSession, id)
	}
	return s, err
}

// Committed is what `cx ctl commit` did to session id: ended now (for
// reason) or not, and the session as it is after.
func Committed(ctx context.Context, db *ledger.DB, id string, ended bool, reason string) (CommitView, error) {
	out := CommitView{Ended: ended}
	if ended {
		out.Reason = reason
	}
	s, err := db.Session(ctx, id)
	if err != nil {
		return out, err
	}
	out.Session = Session(ctx, db, s)
	return out, nil
}

// CommitView is what `cx ctl commit` did.
type CommitView struct {
	Ended   bool        `json:"ended"`
	Reason  string      `json:"reason,omitempty"`
	Session SessionView `json:"session"`
}
