// Package openviking is the OpenViking sink: each captured turn reaches the
// OpenViking session "cx-<id>" once, and each generation is committed there
// once, in order, recovered by the server's own counters when an answer is
// lost. It also maps a turn to OpenViking messages as the OpenViking Codex
// plugin does, gives a resumed session the server's archive overview, and
// checks the server and the plugin for `cx ctl doctor` and install.
package openviking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"cx/internal/ledger"
	"cx/internal/ovclient"
	"cx/internal/rollout"
	"cx/internal/sink"
	"cx/internal/testpoint"
)

// The sink's optional abilities, checked at compile time: lifecycle finds
// them by type assertion, where a drifted signature would turn one off
// without a word.
var (
	_ sink.Sink       = (*Sink)(nil)
	_ sink.Appender   = (*Sink)(nil)
	_ sink.Overviewer = (*Sink)(nil)
	_ sink.Checker    = (*Sink)(nil)
)

// Sink sends each turn to the OpenViking session "cx-<id>" once,
// and commits each generation once, in order. The server has no
// idempotency, so before every request cx records what the server's
// counters should read before it (its total_message_count, or on a legacy
// server its live message_count, which every commit resets; its
// commit_count); when an answer is lost — an error after the work, a
// timeout, a crash — cx waits until the server can no longer be acting on
// the request (its session lock) and then reads the counters to learn
// what arrived, sending only the rest.
type Sink struct {
	h      sink.Host
	once   sync.Once
	client *ovclient.Client
	source ovclient.Source
}

// Name is the sink's name in cx's config and the ledger.
const Name = "openviking"

const ovSink = Name

// New returns the sink; its settings are resolved on first use (every hook
// opens the manager, and most never talk to OpenViking).
func New(h sink.Host) *Sink { return &Sink{h: h} }

// Client is the sink's OpenViking client, built from cx's config and what
// the user already has for OpenViking.
func (o *Sink) Client() *ovclient.Client {
	o.once.Do(func() { o.client, o.source = clientFor(o.h.Cfg, o.h.Getenv) })
	return o.client
}

func classify(err error) error {
	if err == nil || ovclient.Retryable(err) {
		return err
	}
	return &sink.PermanentError{Err: err}
}

// hold is how long after sending cx waits before it asks the server
// whether an unanswered request arrived.
func (o *Sink) hold() time.Duration {
	if d := o.h.Cfg.OpenViking.ServerHold.Duration; d > 0 {
		return d
	}
	return ovclient.ServerHold
}

// refuseWithPlugin parks the sink's jobs while the OpenViking Codex plugin
// captures the same sessions, until the user chooses.
func (o *Sink) refuseWithPlugin(s ledger.Session) error {
	if o.h.Cfg.OpenViking.AllowWithPlugin {
		return nil
	}
	p := ovclient.DetectPlugin(s.CodexHome, o.h.Getenv)
	if !p.Capturing() {
		return nil
	}
	return &sink.PermanentError{Err: fmt.Errorf("the OpenViking Codex plugin is active (%s) and writes the same session %s: %s",
		strings.Join(p.Where, "; "), ovclient.SessionID(s.ID), ovclient.PluginChoices)}
}

// Append sends the turns of generations up to upTo not yet sent.
func (o *Sink) Append(ctx context.Context, s ledger.Session, upTo int) error {
	unlock, err := o.h.LockRemote(ctx, s.ID, ovSink)
	if err != nil {
		return err
	}
	defer unlock()
	if err := o.refuseWithPlugin(s); err != nil {
		return err
	}
	return o.append(ctx, s, upTo)
}

// remote returns what cx expects the server's counters for the session to
// be, establishing them on first contact: the session is created (or
// patched) with the server's auto-commit off, so every commit is cx's.
func (o *Sink) remote(ctx context.Context, sessionID, sid string) (ledger.SinkSession, error) {
	rs, ok, err := o.h.Store.SinkSession(ctx, sessionID, ovSink)
	if err != nil || ok {
		return rs, err
	}
	c := o.Client()
	info, err := c.Session(ctx, sid)
	exists := err == nil
	if err != nil && !errors.Is(err, ovclient.ErrNotFound) {
		return rs, classify(err)
	}
	ac, err := c.Prepare(ctx, sid, exists)
	if err != nil {
		return rs, classify(err)
	}
	if !exists {
		if info, err = c.Session(ctx, sid); err != nil {
			return rs, classify(err)
		}
	}
	rs = ledger.SinkSession{Counter: ledger.CounterLive, Expected: info.MessageCount, Commits: info.CommitCount, AutoCommit: string(ac)}
	if info.TotalMessageCount != nil {
		rs.Counter, rs.Expected = ledger.CounterTotal, *info.TotalMessageCount
	}
	if ac == ovclient.AutoCommitUnsupported {
		o.h.Log.Printf("openviking %s: the server has no per-session auto-commit setting (an older server: it does not auto-commit)", sid)
	}
	return rs, o.h.Store.SaveSinkSession(ctx, sessionID, ovSink, rs)
}

// counter reads the counter rs tracks from the server's info.
func counter(rs ledger.SinkSession, info ovclient.Info) int {
	if rs.Counter == ledger.CounterTotal && info.TotalMessageCount != nil {
		return *info.TotalMessageCount
	}
	return info.MessageCount
}

// settled returns an error while the server may still be acting on a
// request cx sent at sentAt and got no answer to.
func (o *Sink) settled(sentAt time.Time, what string) error {
	if sentAt.IsZero() {
		return nil
	}
	if wait := sentAt.Add(o.hold()).Sub(o.h.Now()); wait > 0 {
		return fmt.Errorf("openviking: %s got no answer; asking the server what arrived once it can no longer be acting on it (in %v)", what, wait.Round(time.Second))
	}
	return nil
}

// arrived returns how many of a turn's n messages, sent before without an
// answer, the server stored.
func (o *Sink) arrived(ctx context.Context, sid string, rs ledger.SinkSession, p ledger.SinkTurn, n int) (int, error) {
	if p.RemoteBefore < 0 {
		o.h.Log.Printf("openviking %s: a turn sent by an older cx without counters is sent again", sid)
		return 0, nil
	}
	if err := o.settled(p.SentAt, "a turn sent to "+sid); err != nil {
		return 0, err
	}
	info, err := o.Client().Session(ctx, sid)
	if errors.Is(err, ovclient.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, classify(err)
	}
	k := counter(rs, info) - p.RemoteBefore
	switch {
	case k < 0:
		o.h.Log.Printf("openviking %s: the server's %s message count (%d) is below what cx counted before sending (%d): sending the turn again",
			sid, rs.Counter, counter(rs, info), p.RemoteBefore)
		return 0, nil
	case k > n:
		o.h.Log.Printf("openviking %s: %d messages arrived where cx sent %d: another writer adds to this session (the OpenViking Codex plugin?)", sid, k, n)
		return n, nil
	}
	return k, nil
}

// commitBarrier is the first generation before upTo whose OpenViking
// commit is not settled: turns after it wait, so each commit archives its
// own generation (0: none).
func (o *Sink) commitBarrier(ctx context.Context, sessionID string, upTo int) (int, error) {
	gens, err := o.h.Store.Generations(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	for _, g := range gens {
		// An empty generation has no commit, and never will: it holds
		// nothing back.
		if g.Generation >= upTo || !slices.Contains(g.Sinks, ovSink) || g.Status == ledger.Live || g.Status == ledger.Empty {
			continue
		}
		c, err := o.h.Store.SinkCommit(ctx, sessionID, ovSink, g.Generation)
		if err != nil {
			return 0, err
		}
		if c.State != ledger.SinkAccepted && c.State != ledger.SinkSkipped {
			return g.Generation, nil
		}
	}
	return 0, nil
}

func (o *Sink) append(ctx context.Context, s ledger.Session, upTo int) error {
	sid := ovclient.SessionID(s.ID)
	if b, err := o.commitBarrier(ctx, s.ID, upTo); err != nil {
		return err
	} else if b > 0 {
		upTo = b
	}
	stored, err := o.h.Store.TurnsUpTo(ctx, s.ID, upTo)
	if err != nil {
		return err
	}
	progress, err := o.h.Store.SinkTurns(ctx, s.ID, ovSink)
	if err != nil {
		return err
	}
	var rs *ledger.SinkSession
	parent := sink.ParentOf(s)
	for _, st := range stored {
		p := progress[st.Key]
		if p.State == ledger.SinkSent {
			continue
		}
		t, ok := sink.Turn(st)
		if !ok {
			continue
		}
		if !t.Complete && len(t.Assistant) == 0 && st.Generation == s.Generation && s.Status == ledger.Live {
			break // the turn is still running: it is sent once it has its answer
		}
		msgs := o.messages(t, parent)
		if rs == nil {
			r, err := o.remote(ctx, s.ID, sid)
			if err != nil {
				return err
			}
			rs = &r
		}
		from := 0
		if p.State == ledger.SinkSending && len(msgs) > 0 {
			// A request for this turn got no answer: what did the server store?
			k, err := o.arrived(ctx, sid, *rs, p, len(msgs))
			if err != nil {
				return err
			}
			if p.RemoteBefore >= 0 {
				rs.Expected = p.RemoteBefore + k
			}
			from = k
		}
		before := rs.Expected - from
		if from < len(msgs) {
			if err := o.putTurn(ctx, s.ID, st.Key, ledger.SinkTurn{State: ledger.SinkSending, Messages: len(msgs), RemoteBefore: before, SentAt: o.h.Now()}, nil); err != nil {
				return err
			}
			testpoint.Crash("sending")
			done, err := o.Client().AddMessages(ctx, sid, msgs[from:])
			if err != nil {
				rec := ledger.SinkTurn{State: ledger.SinkSending, Messages: len(msgs), RemoteBefore: before}
				if ovclient.Unanswered(err) {
					rec.SentAt = o.h.Now() // the server may still be acting on it
				} else {
					// Answered: the server is done with it, whatever it did
					// (an error may follow the work); the next attempt asks.
					o.h.Log.Printf("openviking %s: turn %s: %d of %d messages answered before: %v", sid, st.Key, from+done, len(msgs), err)
				}
				if perr := o.putTurn(ctx, s.ID, st.Key, rec, nil); perr != nil {
					return perr
				}
				return classify(err)
			}
			testpoint.Crash("sent")
		}
		rs.Expected = before + len(msgs)
		if err := o.putTurn(ctx, s.ID, st.Key, ledger.SinkTurn{State: ledger.SinkSent, Messages: len(msgs), RemoteBefore: before}, rs); err != nil {
			return err
		}
	}
	return nil
}

func (o *Sink) putTurn(ctx context.Context, sessionID, key string, st ledger.SinkTurn, rs *ledger.SinkSession) error {
	return o.h.Store.SaveSinkTurn(ctx, sessionID, ovSink, key, st, rs)
}

// Commit sends what is left of the generation's turns, then commits it
// once, after every earlier generation's commit.
func (o *Sink) Commit(ctx context.Context, req sink.Request) error {
	unlock, err := o.h.LockRemote(ctx, req.Session.ID, ovSink)
	if err != nil {
		return err
	}
	defer unlock()
	g := req.Generation.Generation
	prev, err := o.h.Store.SinkCommit(ctx, req.Session.ID, ovSink, g)
	if err != nil {
		return err
	}
	if prev.State == ledger.SinkAccepted || prev.State == ledger.SinkSkipped {
		return nil
	}
	if err := o.refuseWithPlugin(req.Session); err != nil {
		return err
	}
	if b, err := o.commitBarrier(ctx, req.Session.ID, g); err != nil {
		return err
	} else if b > 0 {
		return fmt.Errorf("openviking: generation %d commits after generation %d's commit settles", g, b)
	}
	if err := o.append(ctx, req.Session, g); err != nil {
		return err
	}
	sid := ovclient.SessionID(req.Session.ID)
	c := o.Client()
	info, err := c.Session(ctx, sid)
	if errors.Is(err, ovclient.ErrNotFound) {
		// Nothing was ever appended: nothing to archive.
		return o.putCommit(ctx, req.Session.ID, g, ledger.SinkCommit{State: ledger.SinkSkipped, RemoteBefore: -1, LiveBefore: -1, TotalBefore: -1,
			Detail: "no session on the server"}, nil)
	}
	if err != nil {
		return classify(err)
	}
	rs, err := o.remote(ctx, req.Session.ID, sid)
	if err != nil {
		return err
	}
	if prev.State == ledger.SinkSending {
		if err := o.settled(prev.SentAt, "the commit of "+sid); err != nil {
			return err
		}
		if o.commitArrived(rs, prev, info) {
			rs.Commits = max(rs.Commits, prev.RemoteBefore+1)
			if rs.Counter == ledger.CounterLive {
				rs.Expected = info.MessageCount
			}
			prev.State, prev.SentAt, prev.Detail = ledger.SinkAccepted, time.Time{}, "the commit sent before reached the server"
			return o.putCommit(ctx, req.Session.ID, g, prev, &rs)
		}
	}
	if info.CommitCount > rs.Commits {
		// commit_count rises when a commit's background phase ends; beyond
		// cx's own commits it is the server committing by itself.
		o.h.Log.Printf("openviking %s: the server committed the session by itself (commit_count %d, cx made %d); its auto-commit is %q",
			sid, info.CommitCount, rs.Commits, rs.AutoCommit)
		_ = o.h.Store.AddEvent(ctx, "ov.server_commit", req.Session.ID, fmt.Sprintf("commit_count %d > %d", info.CommitCount, rs.Commits))
		rs.Commits = info.CommitCount
	}
	rec := ledger.SinkCommit{State: ledger.SinkSending, RemoteBefore: rs.Commits, LiveBefore: info.MessageCount, TotalBefore: -1, SentAt: o.h.Now()}
	if info.TotalMessageCount != nil {
		rec.TotalBefore = *info.TotalMessageCount
	}
	if err := o.putCommit(ctx, req.Session.ID, g, rec, &rs); err != nil {
		return err
	}
	testpoint.Crash("committing")
	res, err := c.Commit(ctx, sid)
	if err != nil {
		if !ovclient.Unanswered(err) {
			rec.SentAt = time.Time{} // answered: ask the server at once next time
			if perr := o.putCommit(ctx, req.Session.ID, g, rec, nil); perr != nil {
				return perr
			}
		}
		return classify(err)
	}
	testpoint.Crash("committed")
	rec.SentAt = time.Time{}
	if res.Empty() {
		rec.State, rec.Detail = ledger.SinkSkipped, "nothing to archive"
	} else {
		rec.State, rec.ArchiveURI, rec.Detail = ledger.SinkAccepted, res.ArchiveURI, "task "+res.TaskID
		rs.Commits++
		if rs.Counter == ledger.CounterLive {
			rs.Expected = 0
		}
	}
	return o.putCommit(ctx, req.Session.ID, g, rec, &rs)
}

// commitArrived decides whether a commit sent without an answer was
// accepted: commit_count rose past what it was before (the background
// phase ended), or the live messages cx had sent are no longer live (the
// archive phase, done before the answer, took them).
func (o *Sink) commitArrived(rs ledger.SinkSession, prev ledger.SinkCommit, info ovclient.Info) bool {
	if prev.RemoteBefore >= 0 && info.CommitCount > prev.RemoteBefore {
		return true
	}
	if prev.LiveBefore <= 0 {
		return false // nothing was live: the commit had nothing to archive either way
	}
	liveIfNot := prev.LiveBefore // what would be live had the commit not arrived
	if prev.TotalBefore >= 0 && info.TotalMessageCount != nil {
		liveIfNot += *info.TotalMessageCount - prev.TotalBefore
	} else if rs.Counter == ledger.CounterLive {
		liveIfNot = max(liveIfNot, rs.Expected)
	}
	return info.MessageCount < liveIfNot
}

func (o *Sink) putCommit(ctx context.Context, sessionID string, gen int, c ledger.SinkCommit, rs *ledger.SinkSession) error {
	return o.h.Store.SaveSinkCommit(ctx, sessionID, ovSink, gen, c, rs)
}

// ResumeOverview is the context a resumed session gets from OpenViking:
// the latest finished archive's overview, asked with a budget large enough
// that the server's raw messages do not crowd it out, cut to maxChars, with
// a pointer to the archive. "" when the server has none yet.
func (o *Sink) ResumeOverview(ctx context.Context, codexID string, maxChars int) string {
	sid := ovclient.SessionID(codexID)
	text, err := o.Client().Overview(ctx, sid, ovclient.OverviewBudget)
	text = strings.TrimSpace(text)
	if err != nil || text == "" {
		return "" // not committed yet, or still being summarised by the server
	}
	where := "OpenViking session " + sid
	if uri, _ := o.h.Store.LatestArchiveURI(ctx, codexID, ovSink); uri != "" {
		where += "; latest archive " + uri
	}
	head := fmt.Sprintf("OpenViking archive of this session (%s):\n", where)
	return head + rollout.Bound(text, max(200, maxChars-len(head)))
}

// messages turns a captured turn into OpenViking messages as the OpenViking
// Codex plugin sends them, in the order they happened: the user's text;
// then the assistant's texts and its tool calls, each call an assistant
// message with a running tool part, each result a user message with the
// completed (or error) tool part; every message with the peer.
//
// A subagent's thread is an OpenViking session of its own (cx-<its id>):
// its commits stay exactly once per its own generations, and the server
// summarises a sub-task apart from the work that asked for it. Its user
// messages name the parent's session in a context part.
func (o *Sink) messages(t rollout.Turn, parent string) []ovclient.Message {
	return Messages(t, o.Client().Settings().Peer, o.h.Cfg.OpenViking.MaxToolChars, parent)
}

// Messages is the mapping of one turn (see Sink.messages); parent is the
// Codex session that spawned the turn's thread ("" for none).
func Messages(t rollout.Turn, peer string, maxToolChars int, parent string) []ovclient.Message {
	var out []ovclient.Message
	msg := func(role string, parts ...ovclient.Part) {
		out = append(out, ovclient.Message{Role: role, TurnID: t.Key, CreatedAt: t.Time, PeerID: peer, Parts: parts})
	}
	if strings.TrimSpace(t.User) != "" {
		parts := []ovclient.Part{{Type: "text", Text: t.User}}
		if parent != "" {
			psid := ovclient.SessionID(parent)
			parts = append(parts, ovclient.Part{Type: "context", URI: "viking://session/" + psid, ContextType: "session",
				Abstract: "A subagent's task: this session is a child of OpenViking session " + psid + " (Codex session " + parent + ")"})
		}
		msg("user", parts...)
	}
	tools := append([]rollout.ToolCall(nil), t.Tools...)
	sort.SliceStable(tools, func(i, j int) bool { return tools[i].After < tools[j].After })
	next := 0
	for i := 0; i <= len(t.Assistant); i++ {
		for ; next < len(tools) && tools[next].After <= i; next++ {
			tc := tools[next]
			input := map[string]any{}
			if json.Unmarshal([]byte(tc.Input), &input) != nil || len(input) == 0 {
				input = map[string]any{"input": tc.Input}
			}
			msg("assistant", ovclient.Part{Type: "tool", ToolID: tc.CallID, ToolName: tc.Name, ToolInput: input, ToolStatus: ovclient.ToolRunning})
			status, output := ovclient.ToolCompleted, tc.Output
			switch {
			case !tc.Done:
				status, output = ovclient.ToolError, "[no output: the turn ended before the tool returned]"
			case tc.ExitCode != nil && *tc.ExitCode != 0:
				status = ovclient.ToolError
			}
			msg("user", ovclient.Part{Type: "tool", ToolID: tc.CallID, ToolName: tc.Name, ToolOutput: rollout.Bound(output, maxToolChars), ToolStatus: status})
		}
		if i < len(t.Assistant) && strings.TrimSpace(t.Assistant[i]) != "" {
			msg("assistant", ovclient.Part{Type: "text", Text: t.Assistant[i]})
		}
	}
	return out
}
