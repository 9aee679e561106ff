package exec

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/config"
	"cx/internal/ledger"
	"cx/internal/sink"
)

func request(cwd string) sink.Request {
	exit := 3
	return sink.Request{
		Session:    ledger.Session{ID: "s-1", TranscriptPath: "/r.jsonl", Cwd: cwd},
		Generation: ledger.Generation{SessionID: "s-1", Generation: 2, EndReason: "exit", RunID: "run-1", ExitStatus: &exit},
	}
}

func sinkFor(argv []string, timeout time.Duration) *Sink {
	cfg := config.Config{}
	cfg.Exec.Command, cfg.Exec.Timeout = argv, config.Duration{Duration: timeout}
	return New(sink.Host{Cfg: cfg})
}

// The command gets the session-end JSON on stdin, runs in the session's
// directory, and with cx's hooks off (it may run Codex itself).
func TestCommitRunsTheCommandWithTheSessionEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "got")
	script := `cat > "$1"; echo >> "$1"; pwd >> "$1"; echo "hooks_off=$CX_HOOKS_OFF" >> "$1"`
	x := sinkFor([]string{"sh", "-c", script, "sh", out}, 10*time.Second)
	if err := x.Commit(context.Background(), request(dir)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(data), "\n", 2)
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("stdin is not the JSON: %v\n%s", err, data)
	}
	for k, want := range map[string]any{"session_id": "s-1", "hook_event_name": "SessionEnd", "end_reason": "exit", "generation": 2.0, "run_id": "run-1", "exit_status": 3.0, "cwd": dir, "parent_session_id": nil} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if _, ok := got["parent_session_id"]; !ok {
		t.Error("no parent_session_id (null for a session no agent spawned)")
	}
	// A subagent's thread names the session that spawned it.
	req := request(dir)
	req.Session.Meta = `{"id":"s-1","parent_thread_id":"p-1"}`
	if p := Payload(req)["parent_session_id"]; p != "p-1" {
		t.Errorf("a child's parent_session_id = %v", p)
	}
	if !strings.Contains(lines[1], dir) || !strings.Contains(lines[1], "hooks_off=1") {
		t.Errorf("not run in the session's directory with CX_HOOKS_OFF=1: %q", lines[1])
	}
}

func TestCommitFailures(t *testing.T) {
	var perm *sink.PermanentError
	cases := []struct {
		name      string
		argv      []string
		timeout   time.Duration
		permanent bool
		says      string
	}{
		{"no command", nil, time.Second, true, "command is empty"},
		{"non-zero exit", []string{"sh", "-c", "echo first >&2; echo the last line >&2; exit 4"}, 10 * time.Second, false, "the last line"},
		{"timeout", []string{"sleep", "30"}, 200 * time.Millisecond, false, "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := sinkFor(c.argv, c.timeout).Commit(context.Background(), request(t.TempDir()))
			if err == nil || !strings.Contains(err.Error(), c.says) || errors.As(err, &perm) != c.permanent {
				t.Fatalf("err %v: want one saying %q, permanent %v", err, c.says, c.permanent)
			}
		})
	}
}
