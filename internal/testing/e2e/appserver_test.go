package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cx/internal/codex"
	"cx/internal/testing/codextest"
)

// rpcClient is what a daemon (zouk-daemon) does: JSON-RPC over the stdio of
// `cx app-server`. It keeps every byte it sent and received.
type rpcClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	sent   []byte
	lines  [][]byte
	notify chan struct{}
	nextID int
	exited chan struct{}
}

func startAppServer(t *testing.T, h *H, env ...string) *rpcClient {
	t.Helper()
	return startAppServerWith(t, h, h.CX, env...)
}

// startAppServerWith runs `bin app-server`: cx, or Codex itself.
func startAppServerWith(t *testing.T, h *H, bin string, env ...string) *rpcClient {
	t.Helper()
	// Codex unloads an idle thread only after thread_unload_delay_secs
	// (about 30 minutes by default); a second here, so the test sees it.
	cmd := exec.Command(bin, "app-server", "-c", "thread_unload_delay_secs=1")
	cmd.Dir = h.Work
	cmd.Env = append(h.Env(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rpcClient{t: t, cmd: cmd, in: in, notify: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		defer func() { _ = cmd.Wait(); close(c.exited) }()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, append([]byte(nil), sc.Bytes()...))
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.exited })
	return c
}

func (c *rpcClient) send(msg map[string]any) {
	b, _ := json.Marshal(msg)
	b = append(b, '\n')
	c.mu.Lock()
	c.sent = append(c.sent, b...)
	c.mu.Unlock()
	if _, err := c.in.Write(b); err != nil {
		c.t.Fatalf("write to app-server: %v", err)
	}
}

// wait returns the first received line (after skip) matching pred.
func (c *rpcClient) wait(what string, pred func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		c.mu.Lock()
		for _, l := range c.lines {
			var m map[string]any
			if json.Unmarshal(l, &m) == nil && pred(m) {
				c.mu.Unlock()
				return m
			}
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (c *rpcClient) call(method string, params map[string]any) map[string]any {
	c.t.Helper()
	c.nextID++
	id := float64(c.nextID)
	c.send(map[string]any{"id": c.nextID, "method": method, "params": params})
	m := c.wait(method+" result", func(m map[string]any) bool { return m["id"] == id })
	if m["error"] != nil {
		c.t.Fatalf("%s: %v", method, m["error"])
	}
	res, _ := m["result"].(map[string]any)
	return res
}

func (c *rpcClient) turn(threadID, text string) {
	c.t.Helper()
	c.call("turn/start", map[string]any{"threadId": threadID, "input": []any{map[string]any{"type": "text", "text": text}}})
	c.wait("turn/completed of "+threadID, func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		if m["method"] != "turn/completed" || p["threadId"] != threadID {
			return false
		}
		turn, _ := p["turn"].(map[string]any)
		return turn != nil && strings.Contains(fmt.Sprint(turn), "") && c.t != nil
	})
}

// startThreads starts n threads with one turn each and returns their ids.
func startThreads(c *rpcClient, h *H, n int) []string {
	c.t.Helper()
	var threads []string
	for i := 0; i < n; i++ {
		res := c.call("thread/start", map[string]any{"cwd": h.Work})
		th, _ := res["thread"].(map[string]any)
		id, _ := th["id"].(string)
		if id == "" {
			c.t.Fatalf("thread/start result %v", res)
		}
		threads = append(threads, id)
		c.turn(id, fmt.Sprintf("turn %d", i))
	}
	return threads
}

func initialize(c *rpcClient) {
	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "zouk-daemon-test", "version": "1"}})
	c.send(map[string]any{"method": "initialized"})
}

// The daemon's view: threads through `cx app-server`, a SIGTERM after idle
// (forwarded; every thread ends with one commit), a later resume continuing
// the thread as its next generation; every line the daemon received is
// well-formed JSON-RPC (the relay changes no byte).
func TestAppServerThroughCX(t *testing.T) {
	for _, in := range codextest.Installs(t) {
		if codex.CompareVersions(in.Version, "0.169.0") < 0 {
			continue // the pinned daemon target; 0.128's app-server protocol differs
		}
		t.Run(in.Version, func(t *testing.T) {
			h := New(t, in, Options{})
			tapDir := t.TempDir()
			c := startAppServer(t, h, "CX_TEST_TAP_LOG="+tapDir)
			initialize(c)
			var threads []string
			for i := 0; i < 2; i++ {
				res := c.call("thread/start", map[string]any{"cwd": h.Work})
				th, _ := res["thread"].(map[string]any)
				id, _ := th["id"].(string)
				if id == "" {
					t.Fatalf("thread/start result %v", res)
				}
				threads = append(threads, id)
				prompt := fmt.Sprintf("daemon turn %d", i)
				if i == 0 {
					// An answer streamed as a model streams it: a delta
					// frame a word, which the tap passes without reading.
					prompt += " [[words: 500]]"
				}
				c.turn(id, prompt)
			}
			// Both threads are known (and their turns captured) while they run.
			states := h.Sessions()
			for _, id := range threads {
				if st := states[id]; st.Status != "live" || st.Turns != 1 {
					t.Fatalf("thread %s while running: %+v", id, st)
				}
			}
			// A third thread the daemon lets go of: Codex unloads it
			// (thread/closed, status notLoaded) and cx ends its session now,
			// while the app-server goes on.
			res := c.call("thread/start", map[string]any{"cwd": h.Work})
			th, _ := res["thread"].(map[string]any)
			third, _ := th["id"].(string)
			c.turn(third, "daemon turn to let go")
			c.call("thread/unsubscribe", map[string]any{"threadId": third})
			deadline := time.Now().Add(30 * time.Second)
			for h.Sessions()[third].Status != "committed" && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if st := h.Sessions()[third]; st.Status != "committed" || st.EndReason != "session_end" {
				c.mu.Lock()
				var methods []string
				for _, l := range c.lines {
					var m map[string]any
					if json.Unmarshal(l, &m) == nil && m["method"] != nil {
						methods = append(methods, fmt.Sprint(m["method"]))
					}
				}
				c.mu.Unlock()
				t.Fatalf("unsubscribed thread: %+v; notifications seen: %v", st, methods)
			}
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.exited:
			case <-time.After(30 * time.Second):
				t.Fatal("cx app-server did not exit after SIGTERM")
			}
			code := c.cmd.ProcessState.ExitCode()
			// cx asked Codex to stop the way it ends its threads (stdin
			// closed first): Codex's own SessionEnd hook ran for each.
			for _, id := range threads {
				if !slices.ContainsFunc(h.HookEvents(), func(e HookEvent) bool { return e.Event == "SessionEnd" && e.SessionID == id }) {
					t.Errorf("no SessionEnd hook from Codex for thread %s after SIGTERM to cx", id)
				}
			}
			states = committedOnce(t, h)
			for _, id := range threads {
				if st := states[id]; st.EndReason != "signal:TERM" || st.Generation != 1 {
					t.Fatalf("thread %s after SIGTERM: %+v (cx exit %d)", id, st, code)
				}
			}
			c.mu.Lock()
			for _, l := range c.lines {
				if !json.Valid(l) {
					t.Fatalf("the daemon received a broken frame: %q", l)
				}
			}
			// Both sides of cx, byte for byte: what the daemon sent is what
			// went to Codex; what Codex wrote is what the daemon read.
			toCodex, _ := os.ReadFile(filepath.Join(tapDir, "from-parent"))
			fromCodex, _ := os.ReadFile(filepath.Join(tapDir, "from-child"))
			var received []byte
			for _, l := range c.lines {
				received = append(append(received, l...), '\n')
			}
			if !bytes.Equal(toCodex, c.sent) || !bytes.Equal(fromCodex, received) {
				t.Fatalf("relay changed bytes: sent %d / relayed %d; Codex wrote %d / daemon read %d", len(c.sent), len(toCodex), len(fromCodex), len(received))
			}
			c.mu.Unlock()

			// A later cx app-server resumes the first thread: generation 2.
			c2 := startAppServer(t, h)
			initialize(c2)
			// With cx's hooks installed and trusted in the daemon's
			// CODEX_HOME, a new thread is given the project's context at
			// its start, as in the TUI.
			res = c2.call("thread/start", map[string]any{"cwd": h.Work})
			th, _ = res["thread"].(map[string]any)
			fresh, _ := th["id"].(string)
			c2.turn(fresh, "a new thread of the daemon")
			injected := false
			for _, r := range h.Requests() {
				if (r.Header.Get("session-id") == fresh || r.Header.Get("thread-id") == fresh) && bytes.Contains(r.Body, []byte("<cx-context")) {
					injected = true
				}
			}
			if !injected {
				t.Errorf("the new app-server thread %s was given no <cx-context> block", fresh)
			}
			c2.call("thread/resume", map[string]any{"threadId": threads[0]})
			c2.turn(threads[0], "resumed daemon turn")
			_ = c2.cmd.Process.Signal(syscall.SIGTERM)
			deadline = time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) {
				if st := h.Sessions()[threads[0]]; st.Status == "committed" && st.Generation == 2 {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if st := h.Sessions()[threads[0]]; st.Generation != 2 || st.Commits != 2 || st.TotalTurns != 2 {
				t.Fatalf("resumed thread: %+v", st)
			}
		})
	}
}

// What makes a real app-server end its loaded threads itself, running
// their SessionEnd hooks: measured on Codex directly (no cx), for each stop
// request a daemon or cx can make. Logged, for the README; asserted where
// cx relies on it (stdin EOF).
func TestAppServerStopRequestsMeasured(t *testing.T) {
	for _, in := range codextest.Installs(t) {
		// 0.128 has no SessionEnd hook (no stop request runs one) and its
		// thread protocol differs: there, only how the process ends.
		withThreads := codex.CompareVersions(in.Version, "0.169.0") >= 0
		for _, how := range []string{"stdin-eof", "SIGTERM", "SIGINT"} {
			t.Run(in.Version+"/"+how, func(t *testing.T) {
				h := New(t, in, Options{})
				c := startAppServerWith(t, h, h.Codex.Native)
				initialize(c)
				var threads []string
				if withThreads {
					threads = startThreads(c, h, 2)
				}
				start := time.Now()
				switch how {
				case "stdin-eof":
					_ = c.in.Close()
				case "SIGTERM":
					_ = c.cmd.Process.Signal(syscall.SIGTERM)
				case "SIGINT":
					_ = c.cmd.Process.Signal(syscall.SIGINT)
				}
				select {
				case <-c.exited:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s: app-server still running after 30 s", how)
				}
				took := time.Since(start)
				ended := 0
				for _, e := range h.HookEvents() {
					if e.Event == "SessionEnd" && slices.Contains(threads, e.SessionID) {
						ended++
					}
				}
				t.Logf("Codex %s app-server, %s: exit %d after %v; SessionEnd hooks for %d of %d loaded threads",
					in.Version, how, c.cmd.ProcessState.ExitCode(), took.Round(time.Millisecond), ended, len(threads))
				if how == "stdin-eof" && (ended != len(threads) || c.cmd.ProcessState.ExitCode() != 0) {
					t.Fatalf("stdin EOF: exit %d, SessionEnd for %d of %d threads", c.cmd.ProcessState.ExitCode(), ended, len(threads))
				}
			})
		}
	}
}

// Whatever stop signal cx gets, it asks Codex's app-server to stop the way
// Codex ends its threads (stdin closed) before any signal: on 0.169 a
// forwarded SIGINT or SIGHUP would kill it with no SessionEnd at all.
func TestAppServerStopBySignal(t *testing.T) {
	for _, in := range codextest.Installs(t) {
		if codex.CompareVersions(in.Version, "0.169.0") < 0 {
			continue // 0.128 has no SessionEnd hook
		}
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
			t.Run(in.Version+"/"+sig.String(), func(t *testing.T) {
				h := New(t, in, Options{})
				c := startAppServer(t, h)
				initialize(c)
				threads := startThreads(c, h, 2)
				_ = c.cmd.Process.Signal(sig)
				select {
				case <-c.exited:
				case <-time.After(30 * time.Second):
					t.Fatalf("cx app-server still running 30 s after %v", sig)
				}
				name := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGHUP: "HUP"}[sig]
				states := committedOnce(t, h)
				for _, id := range threads {
					if !slices.ContainsFunc(h.HookEvents(), func(e HookEvent) bool { return e.Event == "SessionEnd" && e.SessionID == id }) {
						t.Errorf("no SessionEnd hook from Codex for thread %s", id)
					}
					if st := states[id]; st.EndReason != "signal:"+name || st.Generation != 1 || st.Commits != 1 {
						t.Errorf("thread %s: %+v, want one commit ended by signal:%s", id, st, name)
					}
				}
				if code := c.cmd.ProcessState.ExitCode(); code != 0 {
					t.Errorf("cx exit %d, want Codex's clean 0", code)
				}
			})
		}
	}
}
