package hookserver

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/ledger"
	"cx/internal/logs"
)

// hostWorld is a CX_HOME, a Codex home and the environment of a hook
// Codex runs there.
type hostWorld struct {
	home string
	vars map[string]string
}

func newHostWorld(t *testing.T) hostWorld {
	t.Helper()
	root := t.TempDir()
	w := hostWorld{home: filepath.Join(root, "cx"), vars: map[string]string{}}
	w.vars["CX_HOME"] = w.home
	w.vars["CODEX_HOME"] = filepath.Join(root, "codex")
	w.vars["HOME"] = root
	return w
}

func (w hostWorld) environ() []string {
	var env []string
	for k, v := range w.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// listen starts a host of w's CX_HOME in this process, as the background
// sweeper does, and stops it when the test ends.
func (w hostWorld) listen(t *testing.T) *host {
	t.Helper()
	db, err := ledger.Open(context.Background(), w.home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := listenHost(w.home, db, logs.New(w.home))
	if h == nil {
		t.Fatal("the host did not listen")
	}
	t.Cleanup(func() { h.close(); db.Close() })
	return h
}

// hook runs one hook as its process would (Environ set: it may go to the
// host), and returns its answer and the audit line it left.
func (w hostWorld) hook(t *testing.T, event, payload string) (string, map[string]any) {
	t.Helper()
	var out bytes.Buffer
	c := HookCall{Event: event, Stdin: strings.NewReader(payload), Stdout: &out, Getenv: env(w.vars), Environ: w.environ(), Start: time.Now(), PPID: os.Getppid()}
	if code := Serve(context.Background(), c); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Count(out.String(), "\n") != 1 || !json.Valid(out.Bytes()) {
		t.Fatalf("answer is not one line of JSON: %q", out.String())
	}
	data, _ := os.ReadFile(filepath.Join(w.home, "logs", "hook-events.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var audit map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &audit); err != nil {
		t.Fatalf("audit line: %v: %q", err, lines[len(lines)-1])
	}
	return out.String(), audit
}

// noHostStarted keeps the tests' processes from starting a host (the test
// binary is no cx) and counts the hooks that would have.
func noHostStarted(t *testing.T) *atomic.Int32 {
	var n atomic.Int32
	old := startHost
	startHost = func(bool) error { n.Add(1); return nil }
	t.Cleanup(func() { startHost = old })
	return &n
}

func startPayload(id string) string {
	return `{"session_id":"` + id + `","transcript_path":"","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}`
}

// A hook the host takes is answered by the host, on the host's ledger
// connection, in the hook's environment: the session is recorded, the
// audit line says so, and the hook's process starts no host.
func TestHostAnswersTheHook(t *testing.T) {
	started := noHostStarted(t)
	w := newHostWorld(t)
	w.listen(t)
	const id = "019a0000-0000-7000-8000-0000000000a1"
	ans, audit := w.hook(t, "SessionStart", startPayload(id))
	if audit["host"] != true || audit["session_id"] != id || audit["ppid"] != float64(os.Getppid()) {
		t.Fatalf("not answered by the host, or the hook's parent lost: %v (answer %q)", audit, ans)
	}
	db, err := ledger.Open(context.Background(), w.home, ledger.Reader, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Session(context.Background(), id); err != nil {
		t.Errorf("the host did not record the session: %v", err)
	}
	if n := started.Load(); n != 0 {
		t.Errorf("a hook the host took started %d host(s)", n)
	}
}

// The host's socket is where hooks look only once it listens: a hook that
// sees it (hookwire.AwaitSocket, the hook that started the host) is not
// refused, however long the host is kept between binding and listening.
func TestHostSocketAppearsListening(t *testing.T) {
	w := newHostWorld(t)
	sock := hookwire.SocketPath(w.home)
	var seen error
	listening = func() {
		_, seen = os.Lstat(sock)
	}
	t.Cleanup(func() { listening = func() {} })
	w.listen(t)
	if !errors.Is(seen, os.ErrNotExist) {
		t.Fatalf("the socket's path, once the host listened and before it was in place: %v; want none there yet", seen)
	}
	conn, err := dialHost(sock)
	if err != nil {
		t.Fatalf("the socket in place refuses: %v", err)
	}
	conn.Close()
	if _, err := os.Lstat(sock + "~"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the bound name is left: %v", err)
	}
}

// Without a host, the hook is answered in its own process, which starts a
// host for the hooks that follow; a hook that must stay in its process (a
// test setting) or is kept from the host (CX_HOOK_HOST=off) starts none.
func TestNoHostAnswersInProcess(t *testing.T) {
	cases := []struct {
		name      string
		extra     map[string]string
		wantStart int32
		wantOwn   string // why no host took it, in the audit line
	}{
		{"no host yet", nil, 1, hookwire.NoHost},
		{"host turned off", map[string]string{hookwire.HostEnv: "off"}, 0, hookwire.OwnOff},
		{"doctor's probe", map[string]string{hookwire.HostEnv: "nostart"}, 0, hookwire.NoHost},
		{"a crash point of the hook's", map[string]string{"CX_TEST_CRASH_AT": "ended"}, 0, hookwire.OwnOff},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			started := noHostStarted(t)
			w := newHostWorld(t)
			for k, v := range c.extra {
				w.vars[k] = v
			}
			_, audit := w.hook(t, "SessionStart", startPayload("019a0000-0000-7000-8000-0000000000b"+string(rune('0'+i))))
			if audit["host"] == true || audit["cpu_ms"] == nil || audit["own"] != c.wantOwn {
				t.Errorf("answered by a host, or no process CPU, or not own %q: %v", c.wantOwn, audit)
			}
			if n := started.Load(); n != c.wantStart {
				t.Errorf("started %d host(s), want %d", n, c.wantStart)
			}
		})
	}
}

// A hook carrying a test setting stays in its process even while a host
// runs: the host's process would not apply it.
func TestHookWithATestSettingIsNotForwarded(t *testing.T) {
	noHostStarted(t)
	w := newHostWorld(t)
	w.listen(t)
	w.vars["CX_TEST_CLOCK"] = "1h"
	_, audit := w.hook(t, "SessionStart", startPayload("019a0000-0000-7000-8000-0000000000c1"))
	if audit["host"] == true {
		t.Fatalf("a hook with CX_TEST_CLOCK was answered by the host: %v", audit)
	}
}

// A hook whose test settings are the host's own (a run whose every process
// has them, as the chaos run's) is the host's.
func TestHookWithTheHostsSettingsIsTaken(t *testing.T) {
	noHostStarted(t)
	t.Setenv("CX_TEST_BACKOFF", "200ms") // the host's process
	w := newHostWorld(t)
	w.listen(t)
	w.vars["CX_TEST_BACKOFF"] = "200ms"
	_, audit := w.hook(t, "SessionStart", startPayload("019a0000-0000-7000-8000-0000000000c2"))
	if audit["host"] != true {
		t.Fatalf("a hook with the host's own settings was not the host's: %v", audit)
	}
	w.vars["CX_TEST_BACKOFF"] = "1s"
	_, audit = w.hook(t, "SessionStart", startPayload("019a0000-0000-7000-8000-0000000000c3"))
	if audit["host"] == true {
		t.Fatalf("a hook with another backoff than the host's was the host's: %v", audit)
	}
}

// The host takes only its own build's hooks: another's is refused, and
// its process answers it.
func TestHostRefusesAnotherBuild(t *testing.T) {
	w := newHostWorld(t)
	h := w.listen(t)
	req := hookwire.Request{Binary: "another build", Event: "SessionStart", Start: time.Now().UnixNano(), Env: w.environ(), Payload: []byte(startPayload("019a0000-0000-7000-8000-0000000000d1"))}
	if _, why := hookwire.Ask(w.home, req, time.Now().Add(2*time.Second)); why == "" {
		t.Fatal("the host took another build's hook")
	}
	req.Binary = h.binary
	out, why := hookwire.Ask(w.home, req, time.Now().Add(2*time.Second))
	taken := why == ""
	if !taken || !json.Valid(out) {
		t.Fatalf("the host did not take its own build's hook: %v %q", taken, out)
	}
}

// The host leaves when what it stands on changes: its socket removed, its
// ledger moved aside (its connection would write a file no one reads), or
// when asked; and once closed it takes no hook.
func TestHostLeaves(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, w hostWorld, h *host)
		why    string
	}{
		{"socket removed", func(t *testing.T, w hostWorld, h *host) { os.Remove(h.sock) }, "its socket was removed"},
		{"ledger moved aside", func(t *testing.T, w hostWorld, h *host) {
			if err := os.Rename(h.db.Path, h.db.Path+".damaged"); err != nil {
				t.Fatal(err)
			}
		}, "the ledger was moved or replaced"},
		{"asked", func(t *testing.T, w hostWorld, h *host) {
			if _, why := hookwire.Ask(w.home, hookwire.Request{Stop: true}, time.Now().Add(time.Second)); why == "" {
				t.Error("a stop was taken as a hook")
			}
		}, "asked to stop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHostWorld(t)
			h := w.listen(t)
			if why := h.gone(); why != "" {
				t.Fatalf("a new host would leave: %s", why)
			}
			c.change(t, w, h)
			if why := h.gone(); why != c.why {
				t.Fatalf("gone() = %q, want %q", why, c.why)
			}
			h.close()
			req := hookwire.Request{Binary: h.binary, Event: "Stop", Payload: []byte("{}")}
			if _, why := hookwire.Ask(w.home, req, time.Now().Add(time.Second)); why == "" {
				t.Error("a closed host took a hook")
			}
		})
	}
}

// A request that is not one is refused, whatever it holds.
func TestHostRefusesGarbage(t *testing.T) {
	w := newHostWorld(t)
	h := w.listen(t)
	for _, garbage := range []string{"", "cxhook1\n", "cxhook1\n99999999999:x", "GET / HTTP/1.0\r\n\r\n", "cxhook1\n1:01:x5:Start1:x1:y1:z"} {
		conn, err := dialHost(h.sock)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte(garbage))
		conn.CloseWrite()
		b, _ := bufio.NewReader(conn).ReadByte()
		conn.Close()
		if b == hookwire.Taken {
			t.Errorf("%q was taken", garbage)
		}
	}
}

func dialHost(sock string) (*net.UnixConn, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// The host stays while the ledger it keeps open is written and
// checkpointed (its size and time change; it is the same file).
func TestHostStaysWhileTheLedgerIsWritten(t *testing.T) {
	noHostStarted(t)
	w := newHostWorld(t)
	h := w.listen(t)
	for i := range 20 {
		w.hook(t, "SessionStart", startPayload(fmt.Sprintf("019a0000-0000-7000-8000-0000000001%02d", i)))
	}
	before, _ := os.Stat(h.db.Path)
	raw, err := sql.Open("sqlite", h.db.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if after, _ := os.Stat(h.db.Path); after.Size() == before.Size() && after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the checkpoint did not change the ledger file: this test shows nothing")
	}
	if why := h.gone(); why != "" {
		t.Fatalf("the host would leave a ledger it wrote: %s", why)
	}
}

// An idle host's watch sleeps, and the first hook it takes wakes it: one
// stuck far past its budget still ends the process.
func TestHostWatchWakesForAHook(t *testing.T) {
	home := t.TempDir()
	h := &host{logger: logs.New(home), stopped: make(chan struct{}), entered: make(chan struct{}, 1)}
	exited := make(chan int, 1)
	go h.watch(func(code int) { exited <- code })
	defer h.stop()
	select {
	case code := <-exited:
		t.Fatalf("an idle host exited %d", code)
	case <-time.After(1500 * time.Millisecond):
	}
	if _, ok := h.enter(time.Now().Add(-stuckGrace - time.Second)); !ok {
		t.Fatal("a host not closing refused a hook")
	}
	select {
	case code := <-exited:
		if code == 0 {
			t.Fatalf("exited %d", code)
		}
	case <-time.After(2500 * time.Millisecond):
		t.Fatal("a host with a stuck hook taken while idle stayed")
	}
}

// A host whose hook is stuck far past its budget ends its own process, so
// the next hooks do not each wait for it (a host that does not take a hook
// at all is left by the hook's process after hookwire.TakeWait); one whose
// hooks are within their budgets stays.
func TestHostLeavesWhenAHookIsStuck(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration // from now
		exits    bool
	}{
		{"within its budget", 5 * time.Second, false},
		{"just past it", -time.Second, false},
		{"stuck", -stuckGrace - time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			h := &host{logger: logs.New(home), stopped: make(chan struct{})}
			id, ok := h.enter(time.Now().Add(c.deadline))
			if !ok {
				t.Fatal("a host not closing refused a hook")
			}
			exited := make(chan int, 1)
			done := make(chan struct{})
			go func() { h.watch(func(code int) { exited <- code }); close(done) }()
			select {
			case code := <-exited:
				if !c.exits || code == 0 {
					t.Fatalf("exited %d", code)
				}
				data, _ := os.ReadFile(filepath.Join(home, "logs", "cx.log"))
				if !strings.Contains(string(data), "past its budget: leaving") {
					t.Fatalf("no word of why in the log: %s", data)
				}
			case <-time.After(2500 * time.Millisecond):
				if c.exits {
					t.Fatal("a host with a stuck hook stayed")
				}
				h.leave(id)
				if late := h.overdue(time.Now().Add(time.Hour)); late != 0 {
					t.Fatalf("a hook answered still counts: %v late", late)
				}
				close(h.stopped)
				<-done
			}
		})
	}
}
