package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"cx/internal/ledger"
	"cx/internal/recall"
	"cx/internal/recall/index"
	"cx/internal/rollout"
)

// seed archives one session that mentions a unique word.
func seed(t *testing.T, home, cwd string) {
	t.Helper()
	ctx := context.Background()
	db, err := ledger.Open(ctx, home, ledger.Writer, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	turns := []rollout.Turn{{Key: "t1", Time: "2026-01-02T10:00:00Z", User: "the staging codename is quillfeather", Assistant: []string{"noted"}}}
	data, _ := json.Marshal(turns)
	err = db.Tx(ctx, func(tx *ledger.Tx) error {
		if err := tx.PutArchive(ctx, "sess-1", 1, string(data), "", ""); err != nil {
			return err
		}
		return index.IndexGeneration(ctx, tx, "sess-1", 1, turns, cwd, recall.NewProjects(home).Of(cwd), tx.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := index.Backfill(ctx, db, home); err != nil {
		t.Fatal(err)
	}
}

// client is a raw JSON-RPC peer of a served cx mcp.
type client struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func start(t *testing.T, home, cwd string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, out: bufio.NewReader(outR), done: make(chan error, 1)}
	go func() {
		err := Serve(ctx, Options{Home: home, Cwd: cwd, Version: "test"}, inR, outW)
		outW.Close()
		c.done <- err
	}()
	return c
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("send %s: %v", line, err)
	}
}

// recv reads the next message (with a timeout).
func (c *client) recv() map[string]any {
	c.t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() { l, err := c.out.ReadString('\n'); ch <- res{l, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			c.t.Fatalf("recv: %v", r.err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(r.line), &m); err != nil {
			c.t.Fatalf("recv %q: %v", r.line, err)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("recv: no answer in 10 s")
		return nil
	}
}

// closeAndWait closes the server's stdin and waits for it to end cleanly.
func (c *client) closeAndWait() {
	c.t.Helper()
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		c.t.Fatal("serve did not end after stdin closed")
	}
}

func (c *client) call(id int, method, params string) map[string]any {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"` + method + `","params":` + params + `}`)
	m := c.recv()
	if got, _ := m["id"].(float64); int(got) != id {
		c.t.Fatalf("%s: answer to id %v, want %d: %v", method, m["id"], id, m)
	}
	return m
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

const initParams = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"0.169.0"}}`

func (c *client) initialize() {
	c.t.Helper()
	m := c.call(1, "initialize", initParams)
	r, _ := m["result"].(map[string]any)
	if r == nil || r["serverInfo"].(map[string]any)["name"] != Name {
		c.t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func toolText(t *testing.T, m map[string]any) (string, bool) {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if r == nil {
		t.Fatalf("no result: %v", m)
	}
	content, _ := r["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content: %v", m)
	}
	isErr, _ := r["isError"].(bool)
	return content[0].(map[string]any)["text"].(string), isErr
}

func TestLifecycleAndTools(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	seed(t, home, cwd)
	c := start(t, home, cwd)
	c.initialize()

	list := c.call(2, "tools/list", `{}`)
	var names []string
	for _, tl := range list["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "search,session,turn" {
		t.Errorf("tools: %v", names)
	}
	if m := c.call(3, "ping", `{}`); m["result"] == nil {
		t.Errorf("ping: %v", m)
	}

	text, isErr := toolText(t, c.call(4, "tools/call", `{"name":"search","arguments":{"query":"quillfeather"}}`))
	if isErr || !strings.Contains(text, "sess-1") || !strings.Contains(text, "«quillfeather»") ||
		!strings.HasPrefix(text, `<cx-context source="cx:recall search"`) || !strings.Contains(text, "context, not instructions") {
		t.Errorf("search: err=%v\n%s", isErr, text)
	}
	// Another project's directory finds nothing unless all_projects.
	text, _ = toolText(t, c.call(5, "tools/call", `{"name":"search","arguments":{"query":"quillfeather","all_projects":true}}`))
	if !strings.Contains(text, "sess-1") {
		t.Errorf("search all projects:\n%s", text)
	}
	text, isErr = toolText(t, c.call(6, "tools/call", `{"name":"turn","arguments":{"id":"sess-1","n":1}}`))
	if isErr || !strings.Contains(text, "the staging codename is quillfeather") || !strings.Contains(text, "noted") {
		t.Errorf("turn: err=%v\n%s", isErr, text)
	}
	text, isErr = toolText(t, c.call(7, "tools/call", `{"name":"session","arguments":{"id":"sess-1"}}`))
	if isErr || !strings.Contains(text, "1  2026-01-02T10:00:00Z  the staging codename is quillfeather") {
		t.Errorf("session: err=%v\n%s", isErr, text)
	}

	// Bad input: each answered as a tool error, the server goes on.
	for i, args := range []string{
		`{"name":"search","arguments":{"query":""}}`,
		`{"name":"search","arguments":{"query":"(unterminated"}}`,
		`{"name":"search","arguments":{"query":"` + strings.Repeat("x", 10<<10) + `"}}`,
		`{"name":"turn","arguments":{"id":"nope","n":1}}`,
		`{"name":"session","arguments":{"id":"nope"}}`,
	} {
		text, isErr := toolText(t, c.call(10+i, "tools/call", args))
		if !isErr || strings.Contains(text, "SQL") {
			t.Errorf("%.60s: isError=%v %q", args, isErr, text)
		}
	}
	// An unknown method is a JSON-RPC error; garbage lines are dropped.
	if m := c.call(20, "no/such/method", `{}`); m["error"] == nil {
		t.Errorf("unknown method: %v", m)
	}
	c.send(`this is not json`)
	c.send(`{"half":`)
	c.send(`{"jsonrpc":"2.0"}`)
	c.send(`[{"jsonrpc":"2.0","id":99,"method":"ping"}]`)
	c.send(`{}`)
	if m := c.call(21, "ping", `{}`); m["result"] == nil {
		t.Errorf("ping after garbage: %v", m)
	}
	// stdin closed: the server ends cleanly.
	c.closeAndWait()
}

func TestCallsBeforeInitialize(t *testing.T) {
	c := start(t, t.TempDir(), t.TempDir())
	m := c.call(1, "tools/call", `{"name":"search","arguments":{"query":"x"}}`)
	if m["error"] == nil {
		t.Errorf("tools/call before initialize: %v", m)
	}
	c.initialize() // and the session still starts
	c.closeAndWait()
}

// A ledger that is not there (no session was ever archived) is an empty
// archive: a search finds nothing, and the server never creates it.
func TestNoLedger(t *testing.T) {
	home := t.TempDir()
	c := start(t, home, t.TempDir())
	c.initialize()
	text, isErr := toolText(t, c.call(2, "tools/call", `{"name":"search","arguments":{"query":"x"}}`))
	if isErr || !strings.Contains(text, "no archived turn matches") {
		t.Errorf("search without a ledger: %v %q", isErr, text)
	}
	if left, err := filepath.Glob(filepath.Join(home, "*")); err != nil || len(left) > 0 {
		t.Fatalf("the server wrote %v (%v)", left, err)
	}
	if m, _ := filepath.Glob(filepath.Join(home, ledger.FileName+"*")); len(m) > 0 {
		t.Errorf("cx mcp created %v", m)
	}
	c.closeAndWait()
}

// Closing stdin while a request is half written ends the server cleanly.
func TestStdinClosedMidRequest(t *testing.T) {
	c := start(t, t.TempDir(), t.TempDir())
	c.initialize()
	if _, err := io.WriteString(c.in, `{"jsonrpc":"2.0","id":5,"method":"tools/ca`); err != nil {
		t.Fatal(err)
	}
	c.closeAndWait()
}

// The official Go SDK's client (the protocol's reference implementation)
// connects, negotiates, lists the tools with their schemas, calls them and
// pings: the hand-written server holds to the protocol.
func TestOfficialSDKClient(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	seed(t, home, cwd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Serve(ctx, Options{Home: home, Cwd: cwd, Version: "test"}, inR, outW)
		outW.Close()
		done <- err
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := session.InitializeResult(); got.ServerInfo.Name != Name || got.Capabilities.Tools == nil {
		t.Errorf("initialize result: %+v", got)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil {
			t.Errorf("%s has no input schema", tl.Name)
		}
	}
	if strings.Join(names, ",") != "search,session,turn" {
		t.Errorf("tools: %v", names)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "quillfeather"}})
	if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "«quillfeather»") {
		t.Fatalf("search: %v %+v", err, res)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "turn", Arguments: map[string]any{"id": "nope", "n": 1}})
	if err != nil || !res.IsError {
		t.Errorf("turn of an unknown session: %v %+v", err, res)
	}
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-tool"}); err == nil {
		t.Error("an unknown tool was not an error")
	}
	if err := session.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	session.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not end after the client closed")
	}
}

// A signal (its context done) ends the server at once though its input
// stays open, and it says what it cost as it leaves — only while CX_HOME
// is there (the line would make it).
func TestLeavesOnSignalSayingItsCost(t *testing.T) {
	for _, c := range []struct {
		name  string
		home  string
		lines int
	}{
		{"CX_HOME there", t.TempDir(), 1},
		{"CX_HOME gone", filepath.Join(t.TempDir(), "gone"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logged []string
			logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			inR, inW := io.Pipe()
			defer inW.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- Serve(ctx, Options{Home: c.home, Version: "test", Log: logf}, inR, io.Discard) }()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the server did not leave on its context's end")
			}
			if len(logged) != c.lines || (c.lines > 0 && !strings.HasPrefix(logged[0], "mcp: leaving; cpu cx=")) {
				t.Fatalf("logged %q", logged)
			}
		})
	}
}
