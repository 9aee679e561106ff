package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/testing/codextest"
)

// hookRun starts `cx ctl hook EVENT` as Codex does and returns its first
// line of output and how long after the start it came. With keepOpen the
// payload is written but stdin is never closed (a Codex that forgets to).
func hookRun(t *testing.T, env []string, event, payload string, keepOpen bool) (string, time.Duration, int) {
	t.Helper()
	cmd := exec.Command(codextest.CX(t), "ctl", "hook", event)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, payload)
	if !keepOpen {
		stdin.Close()
	}
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(stdout).ReadString('\n')
		got <- line{s, err}
	}()
	var l line
	select {
	case l = <-got:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("hook %s never answered", event)
	}
	took := time.Since(start)
	stdin.Close()
	_ = cmd.Wait()
	if l.err != nil {
		t.Fatalf("hook %s: %v", event, l.err)
	}
	return strings.TrimSpace(l.s), took, cmd.ProcessState.ExitCode()
}

func hookEnv(t *testing.T, extra ...string) ([]string, string) {
	home := t.TempDir()
	cxHome := filepath.Join(home, ".cx")
	// The hook host a hook started leaves before the folder goes.
	t.Cleanup(func() { hookwire.StopHost(cxHome, 10*time.Second) })
	return append([]string{"HOME=" + home, "CX_HOME=" + cxHome, "PATH=/usr/bin:/bin"}, extra...), cxHome
}

// Codex clamps SessionEnd and Interrupt to 3 s and kills the hook after
// it: whatever stdin does, the answer leaves within 2.5 s of the start;
// every other event within its own budget.
func TestHookAnswersWithinBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		event string
		limit time.Duration
	}{
		{"SessionEnd", 2500 * time.Millisecond},
		{"Interrupt", 2500 * time.Millisecond},
		{"UserPromptSubmit", 6500 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.event, func(t *testing.T) {
			t.Parallel()
			env, _ := hookEnv(t)
			payload := `{"session_id":"s-open","hook_event_name":"` + c.event + `","cwd":"/"}`
			out, took, code := hookRun(t, env, c.event, payload, true)
			if code != 0 || !json.Valid([]byte(out)) {
				t.Fatalf("answer %q exit %d", out, code)
			}
			if took > c.limit {
				t.Fatalf("%s with stdin left open answered after %v, limit %v", c.event, took, c.limit)
			}
		})
	}
}

// A bug in the handler — a panic where it works or where it answers —
// still gives Codex a valid answer and exit 0, and the stack goes to cx.log.
func TestHookPanicStillAnswers(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"hook-work", "hook-main"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			env, cxHome := hookEnv(t, "CX_TEST_PANIC_AT="+point)
			out, _, code := hookRun(t, env, "Stop", `{"session_id":"s-panic","hook_event_name":"Stop","cwd":"/"}`, false)
			if code != 0 || out != "{}" {
				t.Fatalf("answer %q exit %d", out, code)
			}
			log, _ := os.ReadFile(filepath.Join(cxHome, "logs", "cx.log"))
			if !strings.Contains(string(log), "panic: test panic at "+point) || !strings.Contains(string(log), "goroutine") {
				t.Fatalf("cx.log has no stack of the panic:\n%s", log)
			}
		})
	}
}
