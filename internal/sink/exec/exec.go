// Package exec is the exec sink: it runs the user's command at each
// session end with the session-end JSON on stdin — Codex's SessionEnd
// fields plus cx's. A non-zero exit or a timeout is retried like any job;
// the JSON's session_id and generation let the command recognise a repeat
// after a crash.
package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"cx/internal/sink"
)

var _ sink.Sink = (*Sink)(nil)

// Sink is the exec sink.
type Sink struct{ h sink.Host }

// New returns the exec sink.
func New(h sink.Host) *Sink { return &Sink{h: h} }

// Commit runs the command.
func (x *Sink) Commit(ctx context.Context, req sink.Request) error {
	argv := x.h.Cfg.Exec.Command
	if len(argv) == 0 {
		return &sink.PermanentError{Err: errors.New("sink exec: [exec] command is empty")}
	}
	payload, _ := json.Marshal(Payload(req))
	timeout := x.h.Cfg.Exec.Timeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := osexec.CommandContext(cctx, argv[0], argv[1:]...)
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

// Payload is the session-end JSON the exec sink sends.
func Payload(req sink.Request) map[string]any {
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
		// A subagent's thread: the session that spawned it (null for none).
		"parent_session_id": parentOrNil(sink.ParentOf(req.Session)),
	}
}

func parentOrNil(p string) any {
	if p == "" {
		return nil
	}
	return p
}
