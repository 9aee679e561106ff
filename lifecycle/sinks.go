package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"cx/internal/ledger"
	"cx/internal/openviking"
	"cx/internal/rollout"
)

// JobAppend is the kind of a job that sends a live generation's new turns
// to a remote sink (on Stop), ahead of its commit.
const JobAppend = "append"

// Appender is a sink that takes turns before the session ends.
type Appender interface {
	Append(ctx context.Context, s ledger.Session, upTo int) error
}

// OpenVikingSink sends each turn to the OpenViking session "cx-<id>" once,
// and commits each generation once. Before every request it records
// "sending"; after a crash it asks the server (message and commit counts)
// whether that request arrived before sending again.
type OpenVikingSink struct {
	m      *Manager
	once   sync.Once
	client *openviking.Client
}

const ovSink = "openviking"

// NewOpenVikingSink returns the sink; its settings are resolved on first
// use (every hook opens the manager, and most never talk to OpenViking).
func NewOpenVikingSink(m *Manager) *OpenVikingSink { return &OpenVikingSink{m: m} }

// Client is the sink's OpenViking client, built from cx's config and what
// the user already has for OpenViking.
func (o *OpenVikingSink) Client() *openviking.Client {
	o.once.Do(func() {
		cfg := o.m.Cfg.OpenViking
		home, _ := os.UserHomeDir()
		if h, ok := o.m.Getenv("HOME"); ok && h != "" {
			home = h
		}
		s := openviking.Resolve(openviking.Settings{URL: cfg.URL, Account: cfg.Account, User: cfg.User, Peer: cfg.Peer, Timeout: cfg.Timeout.Duration},
			cfg.APIKeyEnv, o.m.Getenv, home)
		o.client = openviking.New(s)
	})
	return o.client
}

func classify(err error) error {
	if err == nil || openviking.Retryable(err) {
		return err
	}
	return &PermanentError{err}
}

// Append sends the turns of generations up to upTo not yet sent.
func (o *OpenVikingSink) Append(ctx context.Context, s ledger.Session, upTo int) error {
	unlock, err := o.m.lockRemote(ctx, s.ID, ovSink)
	if err != nil {
		return err
	}
	defer unlock()
	return o.append(ctx, s, upTo)
}

func (o *OpenVikingSink) append(ctx context.Context, s ledger.Session, upTo int) error {
	sid := openviking.SessionID(s.ID)
	stored, err := o.m.DB.TurnsUpTo(ctx, s.ID, upTo)
	if err != nil {
		return err
	}
	progress, err := o.m.DB.SinkTurns(ctx, s.ID, ovSink)
	if err != nil {
		return err
	}
	sent := 0
	for _, p := range progress {
		if p.State == ledger.SinkSent {
			sent += p.Messages
		}
	}
	for _, st := range stored {
		p := progress[st.Key]
		if p.State == ledger.SinkSent {
			continue
		}
		var t rollout.Turn
		if err := json.Unmarshal([]byte(st.Data), &t); err != nil {
			continue
		}
		if !t.Complete && len(t.Assistant) == 0 && st.Generation == s.Generation && s.Status == ledger.Live {
			break // the turn is still running: it is sent once it has its answer
		}
		msgs := Messages(t)
		if p.State == ledger.SinkSending {
			// A request for this turn was in flight when cx stopped: did it arrive?
			info, err := o.Client().Session(ctx, sid)
			if err != nil && !errors.Is(err, openviking.ErrNotFound) {
				return classify(err)
			}
			if info.MessageCount >= sent+len(msgs) {
				if err := o.mark(ctx, s.ID, st.Key, ledger.SinkSent, len(msgs)); err != nil {
					return err
				}
				sent += len(msgs)
				continue
			}
		}
		if err := o.mark(ctx, s.ID, st.Key, ledger.SinkSending, len(msgs)); err != nil {
			return err
		}
		crashAt("sending")
		if err := o.Client().AddMessages(ctx, sid, msgs); err != nil {
			return classify(err)
		}
		if err := o.mark(ctx, s.ID, st.Key, ledger.SinkSent, len(msgs)); err != nil {
			return err
		}
		sent += len(msgs)
	}
	return nil
}

func (o *OpenVikingSink) mark(ctx context.Context, sessionID, key, state string, n int) error {
	return o.m.DB.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutSinkTurn(ctx, sessionID, ovSink, key, state, n) })
}

// Commit sends what is left of the generation's turns, then commits it once.
func (o *OpenVikingSink) Commit(ctx context.Context, req CommitRequest) error {
	unlock, err := o.m.lockRemote(ctx, req.Session.ID, ovSink)
	if err != nil {
		return err
	}
	defer unlock()
	if err := o.append(ctx, req.Session, req.Generation.Generation); err != nil {
		return err
	}
	sid := openviking.SessionID(req.Session.ID)
	g := req.Generation.Generation
	prev, err := o.m.DB.SinkCommit(ctx, req.Session.ID, ovSink, g)
	if err != nil {
		return err
	}
	if prev.State == ledger.SinkAccepted || prev.State == ledger.SinkSkipped {
		return nil
	}
	info, err := o.Client().Session(ctx, sid)
	if errors.Is(err, openviking.ErrNotFound) {
		// Nothing was ever appended: nothing to archive.
		return o.putCommit(ctx, req.Session.ID, g, ledger.SinkCommit{State: ledger.SinkSkipped, Detail: "no session on the server"})
	}
	if err != nil {
		return classify(err)
	}
	if prev.State == ledger.SinkSending && info.CommitCount > prev.RemoteBefore {
		// The commit sent before a crash (or a lost answer) was accepted.
		return o.putCommit(ctx, req.Session.ID, g, ledger.SinkCommit{State: ledger.SinkAccepted, RemoteBefore: prev.RemoteBefore, Detail: "recovered"})
	}
	if err := o.putCommit(ctx, req.Session.ID, g, ledger.SinkCommit{State: ledger.SinkSending, RemoteBefore: info.CommitCount}); err != nil {
		return err
	}
	crashAt("committing")
	res, err := o.Client().Commit(ctx, sid)
	if err != nil {
		return classify(err)
	}
	state := ledger.SinkAccepted
	if res.Status == "skipped" {
		state = ledger.SinkSkipped
	}
	return o.putCommit(ctx, req.Session.ID, g, ledger.SinkCommit{State: state, RemoteBefore: info.CommitCount, Detail: res.ArchiveURI + res.Reason})
}

func (o *OpenVikingSink) putCommit(ctx context.Context, sessionID string, gen int, c ledger.SinkCommit) error {
	return o.m.DB.Tx(ctx, func(tx *ledger.Tx) error { return tx.PutSinkCommit(ctx, sessionID, ovSink, gen, c) })
}

// Messages turns a captured turn into OpenViking messages: the user's text,
// then the assistant's text with its tool calls as tool parts.
func Messages(t rollout.Turn) []openviking.Message {
	var out []openviking.Message
	if strings.TrimSpace(t.User) != "" {
		out = append(out, openviking.Message{Role: "user", TurnID: t.Key, CreatedAt: t.Time,
			Parts: []openviking.Part{{Type: "text", Text: t.User}}})
	}
	var parts []openviking.Part
	for _, tc := range t.Tools {
		input := map[string]any{}
		if json.Unmarshal([]byte(tc.Input), &input) != nil || len(input) == 0 {
			input = map[string]any{"input": tc.Input}
		}
		status := "completed"
		switch {
		case tc.ExitCode != nil && *tc.ExitCode != 0:
			status = "error"
		case !tc.Done:
			status = "incomplete"
		}
		parts = append(parts, openviking.Part{Type: "tool", ToolID: tc.CallID, ToolName: tc.Name, ToolInput: input, ToolOutput: tc.Output, ToolStatus: status})
	}
	for _, a := range t.Assistant {
		parts = append(parts, openviking.Part{Type: "text", Text: a})
	}
	if len(parts) > 0 {
		out = append(out, openviking.Message{Role: "assistant", TurnID: t.Key, CreatedAt: t.Time, Parts: parts})
	}
	return out
}

// ExecSink runs the user's command at each session end with the
// session-end JSON on stdin: Codex's SessionEnd fields plus cx's. A non-zero
// exit or a timeout is retried like any job; the JSON's session_id and
// generation let the command recognise a repeat after a crash.
type ExecSink struct{ m *Manager }

// Commit runs the command.
func (x *ExecSink) Commit(ctx context.Context, req CommitRequest) error {
	argv := x.m.Cfg.Exec.Command
	if len(argv) == 0 {
		return &PermanentError{errors.New("sink exec: [exec] command is empty")}
	}
	payload, _ := json.Marshal(ExecPayload(req))
	timeout := x.m.Cfg.Exec.Timeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Dir = req.Session.Cwd
	if _, err := os.Stat(cmd.Dir); err != nil {
		cmd.Dir = ""
	}
	cmd.Env = append(os.Environ(), "CX_HOOKS_OFF=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if cctx.Err() != nil {
			return fmt.Errorf("sink exec %v: timed out after %v", argv, timeout)
		}
		return fmt.Errorf("sink exec %v: %v: %s", argv, err, strings.TrimSpace(lastLine(errb.String())))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ExecPayload is the session-end JSON the exec sink sends.
func ExecPayload(req CommitRequest) map[string]any {
	var exit any
	if req.Generation.ExitStatus != nil {
		exit = *req.Generation.ExitStatus
	}
	return map[string]any{
		"session_id":      req.Session.ID,
		"transcript_path": req.Session.TranscriptPath,
		"cwd":             req.Session.Cwd,
		"hook_event_name": "SessionEnd",
		"reason":          "other",
		"end_reason":      req.Generation.EndReason,
		"generation":      req.Generation.Generation,
		"run_id":          req.Generation.RunID,
		"exit_status":     exit,
	}
}
