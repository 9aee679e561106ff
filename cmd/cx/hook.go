package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ctlHook is the handler Codex runs for each hook event: JSON on stdin, a
// valid answer on stdout, always exit 0 — a hook must never block or break
// Codex. (This first version records the event; the session lifecycle acts
// on it.)
func (a *app) ctlHook(ctx context.Context, args []string) int {
	event := ""
	if len(args) > 0 {
		event = args[0]
	}
	payload, readErr := readHookInput(a.stdin, 8<<20, 5*time.Second)
	var fields struct {
		HookEventName string `json:"hook_event_name"`
	}
	parseErr := json.Unmarshal(payload, &fields)
	if parseErr == nil && fields.HookEventName != "" {
		event = fields.HookEventName // the payload's name wins
	}
	if os.Getenv("CX_HOOKS_OFF") != "1" {
		a.logHookEvent(event, payload, readErr, parseErr)
	}
	fmt.Fprintln(a.stdout, "{}")
	return 0
}

// readHookInput reads stdin up to max bytes, giving up after d (a hook must
// answer even when its input never closes).
func readHookInput(r io.Reader, max int64, d time.Duration) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, max))
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		return res.b, res.err
	case <-time.After(d):
		return nil, fmt.Errorf("hook input not closed within %v", d)
	}
}

func (a *app) logHookEvent(event string, payload []byte, readErr, parseErr error) {
	home, err := cxHome(a)
	if err != nil {
		return
	}
	dir := filepath.Join(home, "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	rec := map[string]any{
		"time":   time.Now().UTC().Format(time.RFC3339Nano),
		"event":  event,
		"run_id": os.Getenv("CX_RUN_ID"),
		"ppid":   os.Getppid(),
	}
	if parseErr == nil {
		rec["payload"] = json.RawMessage(payload)
	} else {
		rec["error"] = fmt.Sprintf("parse hook input: %v", parseErr)
	}
	if readErr != nil {
		rec["error"] = readErr.Error()
	}
	line, _ := json.Marshal(rec)
	f, err := os.OpenFile(filepath.Join(dir, "hook-events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

func cxHome(a *app) (string, error) {
	return configHome(a.getenv)
}
