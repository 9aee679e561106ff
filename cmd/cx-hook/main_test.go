package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cx/internal/hookwire"
	"cx/internal/testing/codextest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

type world struct {
	t          *testing.T
	client, cx string
	home       string
	env        []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cx := codextest.CX(t)
	root := t.TempDir()
	w := &world{t: t, cx: cx, client: filepath.Join(filepath.Dir(cx), "cx-hook"), home: filepath.Join(root, "cx")}
	w.env = codextest.IsolatedEnv(root, w.home)
	t.Cleanup(w.stopHosts)
	return w
}

// stopHosts stops CX_HOME's host, and any started after it (cx, answering
// a hook, starts one when none listens: detached, it may take the place
// only after the hook has ended), before CX_HOME goes: quiet means no one
// has held the place for a second.
func (w *world) stopHosts() {
	end := time.Now().Add(30 * time.Second)
	for quietSince := time.Now(); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if hookwire.SweeperRunning(w.home) {
			hookwire.StopHost(w.home, 10*time.Second)
			quietSince = time.Now()
		} else if time.Since(quietSince) >= time.Second {
			return
		}
	}
	w.t.Errorf("a host of %s did not leave", w.home)
}

// run runs the client with args and stdin, and returns its stdout.
func (w *world) run(stdin string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command(w.client, args...)
	cmd.Env = w.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			w.t.Fatalf("cx-hook %v: %v\n%s", args, err, errb.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		w.t.Fatalf("cx-hook %v did not end", args)
	}
	return out.String()
}

// auditLines is how many lines the hook log holds.
func (w *world) auditLines() int {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join(w.home, "logs", "hook-events.jsonl"))
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// lastAudit is the hook log's last line.
func (w *world) lastAudit() map[string]any {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join(w.home, "logs", "hook-events.jsonl"))
	if err != nil {
		w.t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var a map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &a); err != nil {
		w.t.Fatal(err)
	}
	return a
}

func payload(id string) string {
	return `{"session_id":"` + id + `","transcript_path":"","cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}`
}

// The first hook finds no host: it starts one and is its first, as the
// hook of the same parent (Codex) — one cx process, not the host and a cx
// of its own beside it; the hooks after it are the host's, with the same
// parent.
func TestClientThenHost(t *testing.T) {
	w := newWorld(t)
	if out := w.run(payload("019a0000-0000-7000-8000-0000000000e1"), "SessionStart"); !json.Valid([]byte(out)) {
		t.Fatalf("answer %q", out)
	}
	a := w.lastAudit()
	if a["host"] != true || a["ppid"] != float64(os.Getpid()) || a["own"] != nil || a["session_id"] != "019a0000-0000-7000-8000-0000000000e1" {
		t.Fatalf("first hook: %v; want the answer of the host it started, with this test as the hook's parent (%d)", a, os.Getpid())
	}
	if n := w.auditLines(); n != 1 {
		t.Fatalf("%d audit lines for one hook: answered twice?", n)
	}
	w.run(payload("019a0000-0000-7000-8000-0000000000e2"), "Stop")
	if a := w.lastAudit(); a["host"] != true || a["ppid"] != float64(os.Getpid()) || a["session_id"] != "019a0000-0000-7000-8000-0000000000e2" {
		t.Fatalf("second hook: %v; want the host's answer with this test as the hook's parent", a)
	}
}

// Doctor's probe (CX_HOOK_HOST=nostart) is answered, and leaves no host
// behind it.
func TestProbeStartsNoHost(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, hookwire.HostEnv+"=nostart")
	if out := w.run(payload("cx-doctor-1"), "SessionStart"); !json.Valid([]byte(out)) {
		t.Fatalf("answer %q", out)
	}
	time.Sleep(300 * time.Millisecond)
	if hookwire.SweeperRunning(w.home) || hookwire.AwaitSocket(w.home, 0) {
		t.Fatal("doctor's probe started a host")
	}
}

// What is not an event goes to cx's handler, which says what it is; a
// client with no cx beside it still answers Codex.
func TestClientEdges(t *testing.T) {
	w := newWorld(t)
	if out := w.run("", "--help"); !strings.Contains(out, "The hook handler Codex runs") {
		t.Errorf("--help: %q", out)
	}
	w.env = append(w.env, "CX_HOOKS_OFF=1")
	if out := w.run(payload("x"), "Stop"); out != "{}\n" {
		t.Errorf("hooks off: %q", out)
	}
	alone := filepath.Join(t.TempDir(), "cx-hook")
	data, err := os.ReadFile(w.client)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	w.client = alone
	w.env = w.env[:len(w.env)-1]
	if out := w.run(payload("019a0000-0000-7000-8000-0000000000e3"), "SessionStart"); out != "{}\n" {
		t.Errorf("no cx beside the client: %q", out)
	}
}

// A hung host — its place held, its socket there, no hook taken — costs a
// hook hookwire.TakeWait once, not its budget: the hook is then answered by
// cx in its own process (recorded as its own), and asks the hung host no
// more.
func TestHungHost(t *testing.T) {
	w := newWorld(t)
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		t.Fatal(err)
	}
	lock := hookwire.TakeSweepLock(w.home) // the hung host's place
	if lock == nil {
		t.Fatal("could not take the host's place")
	}
	defer lock.Close()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: hookwire.SocketPath(w.home)}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 8); err != nil { // never accepted: hung
		t.Fatal(err)
	}
	start := time.Now()
	out := w.run(payload("019a0000-0000-7000-8000-0000000000f1"), "Stop")
	took := time.Since(start)
	if !json.Valid([]byte(out)) {
		t.Fatalf("answer %q", out)
	}
	if a := w.lastAudit(); a["host"] == true || a["session_id"] != "019a0000-0000-7000-8000-0000000000f1" || a["own"] != hookwire.NotTaken {
		t.Fatalf("audit %v: want cx's own answer, not taken", a)
	}
	if took > 2*hookwire.TakeWait {
		t.Fatalf("the hook took %v beside a hung host; want one TakeWait (%v) and cx's answer", took, hookwire.TakeWait)
	}
}

// A host that leaves while a hook waits for it (its place held, no socket:
// it is going) leaves the place to that hook, which starts the next host
// rather than leaving CX_HOME without one until the hook after it.
func TestHookStartsTheHostAfterOneLeaving(t *testing.T) {
	w := newWorld(t)
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		t.Fatal(err)
	}
	leaving := hookwire.TakeSweepLock(w.home) // the host that is going
	if leaving == nil {
		t.Fatal("could not take the host's place")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		leaving.Close() // gone
	}()
	if out := w.run(payload("019a0000-0000-7000-8000-0000000000f2"), "Stop"); !json.Valid([]byte(out)) {
		t.Fatalf("answer %q", out)
	}
	if a := w.lastAudit(); a["host"] != true || a["own"] != nil {
		t.Fatalf("audit %v: want the answer of the host it started after the one leaving", a)
	}
}

// A host that does not listen (here its socket's path is taken by a
// folder) leaves the hook that started it to cx beside the client, within
// the host's start wait: Codex gets its answer, and the audit says why.
func TestHostThatDoesNotListen(t *testing.T) {
	w := newWorld(t)
	if err := os.MkdirAll(filepath.Join(hookwire.SocketPath(w.home), "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out := w.run(payload("019a0000-0000-7000-8000-0000000000f3"), "Stop"); !json.Valid([]byte(out)) {
		t.Fatalf("answer %q", out)
	}
	took := time.Since(start)
	if a := w.lastAudit(); a["host"] == true || a["own"] != hookwire.NoHost+", starting one" {
		t.Fatalf("audit %v: want cx's own answer (no host, starting one)", a)
	}
	if took > hostStartWait+5*time.Second {
		t.Fatalf("the hook took %v; want its host's start wait (%v) and cx's answer", took, hostStartWait)
	}
}

// Input that never closes (Codex's pipe held open, part of a payload
// written) is given up on within the hook's budget, and Codex gets the
// answer that changes nothing.
func TestInputNotClosed(t *testing.T) {
	w := newWorld(t)
	w.env = append(w.env, "CX_HOOKS_OFF=1") // the input is read first, the host not asked
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command(w.client, "SessionEnd")
	cmd.Env = w.env
	cmd.Stdin = r
	var out bytes.Buffer
	cmd.Stdout = &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := pw.WriteString(`{"session_id":`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(start)
		if err != nil || out.String() != "{}\n" || took > hookwire.Budget("SessionEnd") || took < hookwire.Budget("SessionEnd")-time.Second {
			t.Fatalf("input never closed: %v, %q after %v (budget %v)", err, out.String(), took, hookwire.Budget("SessionEnd"))
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("cx-hook waited on input that never closes")
	}
}
