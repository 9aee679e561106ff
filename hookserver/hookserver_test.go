package hookserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/ledger"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// serve runs one hook and returns its answer, which must be one line of
// valid JSON, and how long it took.
func serve(t *testing.T, c HookCall) (map[string]any, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	c.Stdout = &out
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	start := time.Now()
	if code := Serve(context.Background(), c); code != 0 {
		t.Fatalf("exit %d", code)
	}
	took := time.Since(start)
	if strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("answer is not one line: %q", out.String())
	}
	var ans map[string]any
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		t.Fatalf("answer is not JSON: %q", out.String())
	}
	return ans, took
}

// Whatever the input, Codex gets one valid answer and exit 0; a session
// start is recorded in the ledger.
func TestServeAnswersEveryInput(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{"CX_HOME": home, "CODEX_HOME": t.TempDir()}
	start := `{"session_id":"019a0000-0000-7000-8000-000000000001","transcript_path":"","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}`
	cases := []struct {
		name  string
		event string
		stdin string
		err   error
		env   map[string]string
	}{
		{"malformed JSON", "Stop", `{"session_id": `, nil, vars},
		{"hooks off", "SessionStart", start, nil, map[string]string{"CX_HOOKS_OFF": "1", "CX_HOME": home}},
		{"refused command line", "Bogus", start, errors.New("unknown event Bogus"), vars},
		{"empty input", "Stop", "", nil, vars},
		{"a session's start", "SessionStart", start, nil, vars},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			serve(t, HookCall{Event: c.event, ArgErr: c.err, Stdin: strings.NewReader(c.stdin), Getenv: env(c.env)})
		})
	}
	ctx := context.Background()
	db, err := ledger.Open(ctx, home, ledger.Reader, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Session(ctx, "019a0000-0000-7000-8000-000000000001"); err != nil {
		t.Errorf("the session start was not recorded: %v", err)
	}
}

// Input that never ends is answered within the event's budget, counted
// from the process's start: here 1 s of it is left, and the answer comes
// once the input's deadline (200 ms before the budget's end) has passed,
// before the budget is out (a scheduling margin aside).
func TestServeAnswersWithinItsBudget(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	const left, margin = time.Second, 300 * time.Millisecond
	budget := hookwire.Budget("SessionEnd")
	_, took := serve(t, HookCall{Event: "SessionEnd", Stdin: r, Getenv: env(map[string]string{"CX_HOME": t.TempDir()}), Start: time.Now().Add(-budget + left)})
	if took < left-200*time.Millisecond || took > left+margin {
		t.Errorf("answered after %v; want after the input deadline (%v) and within the %v left", took, left-200*time.Millisecond, left)
	}
}
