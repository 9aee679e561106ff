package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"cx/internal/hookwire"
	"cx/internal/mcpproto"
	"cx/internal/testing/codextest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	codextest.RemoveBuilt()
	os.Exit(code)
}

// world is a CX_HOME and the binaries a release puts side by side.
type world struct {
	cx, front string
	home      string
	env       []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cx := codextest.CX(t)
	root := t.TempDir()
	w := &world{cx: cx, front: filepath.Join(filepath.Dir(cx), "cx-mcp"), home: filepath.Join(root, "cx")}
	w.env = codextest.IsolatedEnv(root, w.home)
	if err := os.MkdirAll(w.home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hookwire.StopHost(w.home, 10*time.Second) })
	return w
}

// handshake is what Codex sends a server it starts, and a few lines a
// client may send besides: a method the server has not, a line that is not
// JSON-RPC, a ping.
var handshake = []string{
	`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"0.171.0"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
	`{"jsonrpc":"2.0","id":"x","method":"resources/list"}`,
	`not json`,
	`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`,
}

// mcpStream runs `bin args` on stdin in env and returns its stdout.
func mcpStream(t *testing.T, env []string, stdin string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, errb.String())
	}
	return out.String()
}

// alone is a copy of the front in a folder with no cx beside it.
func alone(t *testing.T, front string) string {
	t.Helper()
	data, err := os.ReadFile(front)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cx-mcp")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// The front answers what needs no archive as `cx mcp` does, byte for byte
// — with no cx beside it, so no answer is cx's — and says what it cost as
// it leaves, as cx's server does.
func TestMCPFrontAnswersAsCX(t *testing.T) {
	w := newWorld(t)
	in := strings.Join(handshake, "\n") + "\n"
	want := mcpStream(t, w.env, in, w.cx, "mcp")
	got := mcpStream(t, w.env, in, alone(t, w.front))
	if got != want {
		t.Fatalf("the front answered\n%s\nwhere cx mcp answers\n%s", got, want)
	}
	if n := strings.Count(want, "\n"); n != 6 {
		t.Fatalf("cx mcp answered %d lines, want 6 (a notification and a broken line have none):\n%s", n, want)
	}
	log, err := os.ReadFile(filepath.Join(w.home, "logs", "cx.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "mcp: leaving; cpu cx="); n != 2 {
		t.Fatalf("cx.log has %d leaving lines, want 2 (cx's, the front's):\n%s", n, log)
	}
	if n := strings.Count(string(log), "mcp: dropped a line (9 bytes)"); n != 2 {
		t.Fatalf("cx.log has %d dropped lines, want 2:\n%s", n, log)
	}
}

// rawPeer is a client of a server process on raw pipes.
type rawPeer struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

func startRaw(t *testing.T, env []string, bin string) *rawPeer {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{t: t, in: in, out: bufio.NewReader(out), cmd: cmd}
	t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	return p
}

// send writes lines in one write (a client that does not wait).
func (p *rawPeer) send(lines ...string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, strings.Join(lines, "\n")+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads one answer.
func (p *rawPeer) recv() map[string]any {
	p.t.Helper()
	type read struct {
		line string
		err  error
	}
	ch := make(chan read, 1)
	go func() { l, err := p.out.ReadString('\n'); ch <- read{l, err} }()
	select {
	case r := <-ch:
		var m map[string]any
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			p.t.Fatalf("answer %q: %v (read: %v)", r.line, err, r.err)
		}
		return m
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		p.t.Fatal("no answer within 20s")
		return nil
	}
}

// The first tool call hands the stream to cx in the front's place (the
// same process: one server, as Codex sees it), with what the client sent
// after the call before it was answered; cx answers the call and the rest.
func TestMCPFrontHandsOverTheCall(t *testing.T) {
	w := newWorld(t)
	p := startRaw(t, w.env, w.front)
	p.send(handshake[1], handshake[2])
	if r := p.recv(); r["id"] != float64(1) || r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"quillfeather"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	r := p.recv()
	res, _ := r["result"].(map[string]any)
	if r["id"] != float64(5) || res == nil || res["isError"] == true || !strings.Contains(mustJSON(res), "quillfeather") {
		t.Fatalf("the call was not cx's answer: %v", r)
	}
	if r := p.recv(); r["id"] != float64(6) || r["result"] == nil {
		t.Fatalf("the ping sent with the call: %v", r)
	}
	// Still initialized, still the same process: a second call, answered.
	p.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"turn","arguments":{"id":"nope","n":1}}}`)
	if r := p.recv(); r["id"] != float64(7) || r["result"].(map[string]any)["isError"] != true {
		t.Fatalf("a second call: %v", r)
	}
	pid := p.cmd.Process.Pid
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("server: %v", err)
	}
	log, err := os.ReadFile(filepath.Join(w.home, "logs", "cx.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), " pid="+itoa(pid)+" mcp: leaving; cpu cx=") || strings.Count(string(log), "mcp: leaving") != 1 {
		t.Fatalf("want one leaving line, of pid %d (the front's, exec'd into cx):\n%s", pid, log)
	}
}

// A call the front cannot hand over — no cx beside it, or larger than a
// handoff carries — is answered with an error, and the stream goes on.
func TestMCPFrontCallNotTaken(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		name, client, query, why string
	}{
		{"no cx beside it", alone(t, w.front), "x", "cx could not take it"},
		{"too large", w.front, strings.Repeat("y", mcpproto.MaxPending), "more than cx's MCP server takes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startRaw(t, w.env, c.client)
			p.send(handshake[1], handshake[2])
			p.recv()
			p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"` + c.query + `"}}}`)
			r := p.recv()
			e, _ := r["error"].(map[string]any)
			if r["id"] != float64(5) || e == nil || e["code"] != float64(mcpproto.CodeInternal) || !strings.Contains(e["message"].(string), c.why) {
				t.Fatalf("call: %v; want an error saying %q", r, c.why)
			}
			p.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
			if r := p.recv(); r["id"] != float64(6) || r["result"] == nil {
				t.Fatalf("ping after: %v", r)
			}
		})
	}
}

// The official Go SDK's client, over the front as Codex starts it: the
// handshake is the front's, the calls cx's.
func TestMCPFrontOfficialSDKClient(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(w.front)
	cmd.Env = w.env
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if got := session.InitializeResult(); got.ServerInfo.Name != mcpproto.Name || got.Capabilities.Tools == nil {
		t.Errorf("initialize result: %+v", got)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(mcpproto.Tools) {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "quillfeather"}})
	if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "quillfeather") {
		t.Fatalf("search: %v %+v", err, res)
	}
	if err := session.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Codex ending a session may close the server's input and signal it at
// once: the front says what it cost once, not twice (it is counted as
// cx's).
func TestMCPFrontLeavesOnce(t *testing.T) {
	w := newWorld(t)
	const rounds = 20
	for range rounds {
		p := startRaw(t, w.env, w.front)
		p.send(handshake[1], handshake[2], handshake[3])
		p.recv()
		p.recv()
		p.in.Close()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
	}
	log, err := os.ReadFile(filepath.Join(w.home, "logs", "cx.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "mcp: leaving; cpu cx="); n != rounds {
		t.Fatalf("%d leaving lines for %d servers:\n%s", n, rounds, log)
	}
}
