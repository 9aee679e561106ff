// The app-server client talks to Codex's own app-server (`codex app-server`) over
// stdio: newline-delimited JSON-RPC without the "jsonrpc" member. cx uses it
// to do what the Codex TUI does — list hooks and record hook trust — so the
// recipe stays Codex's, not a copy of it.

package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// Client is one running `codex app-server`, or another child that speaks
// newline-delimited JSON-RPC on its stdin and stdout (StartRPC).
type Client struct {
	name    string // what the child is called in errors
	jsonrpc string // the "jsonrpc" member of every message ("" for none)
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	nextID  int
	waits   map[int]chan response
	done    chan struct{}
	err     error
	stderr  *limitedBuffer
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// RPCError is an error answer from the app-server.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("app-server error %d: %s", e.Code, e.Message) }

// Start runs `bin app-server` with env (nil: inherit) and performs the
// initialize handshake.
func Start(ctx context.Context, bin string, env []string, extraArgs ...string) (*Client, error) {
	cmd := exec.Command(bin, append([]string{"app-server"}, extraArgs...)...)
	cmd.Env = env
	c, err := StartRPC(cmd, "app-server", "")
	if err != nil {
		return nil, fmt.Errorf("start %s app-server: %w", bin, err)
	}
	var init json.RawMessage
	if err := c.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "cx", "title": "cx", "version": "1"},
	}, &init); err != nil {
		c.Close()
		return nil, fmt.Errorf("app-server initialize: %w", err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StartRPC starts cmd and talks newline-delimited JSON-RPC with it over its
// stdin and stdout (its stderr kept, bounded, for errors); name is what it
// is called in errors, jsonrpc the "jsonrpc" member every message carries
// ("2.0" for MCP; Codex's app-server has none).
func StartRPC(cmd *exec.Cmd, name, jsonrpc string) (*Client, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Client{name: name, jsonrpc: jsonrpc, cmd: cmd, stdin: stdin, waits: map[int]chan response{}, done: make(chan struct{}), stderr: &limitedBuffer{max: 8 << 10}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go c.readLoop(stdout)
	return c, nil
}

func (c *Client) readLoop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var msg struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			response
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil || msg.Method != "" {
			continue // notifications and server requests are not ours to answer here
		}
		var id int
		if json.Unmarshal(*msg.ID, &id) != nil {
			continue
		}
		c.mu.Lock()
		ch := c.waits[id]
		delete(c.waits, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg.response
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%s closed its output", c.name)
	if err := sc.Err(); err != nil {
		c.err = fmt.Errorf("read %s output: %w", c.name, err)
	}
	c.mu.Unlock()
	close(c.done)
}

// Call sends a request and decodes its result into out (may be nil).
func (c *Client) Call(ctx context.Context, method string, params any, out any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan response, 1)
	c.waits[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if c.jsonrpc != "" {
		msg["jsonrpc"] = c.jsonrpc
	}
	if params != nil {
		msg["params"] = params
	}
	if err := c.write(msg); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %w", method, r.Error)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("%s: decode result: %w", method, err)
			}
		}
		return nil
	case <-c.done:
		return fmt.Errorf("%s: %w (stderr: %s)", method, c.err, c.stderr.String())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Client) Notify(method string, params any) error {
	msg := map[string]any{"method": method}
	if c.jsonrpc != "" {
		msg["jsonrpc"] = c.jsonrpc
	}
	if params != nil {
		msg["params"] = params
	}
	return c.write(msg)
}

func (c *Client) write(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to %s: %w", c.name, err)
	}
	return nil
}

// Close ends the child: stdin closed, then SIGTERM, then kill.
func (c *Client) Close() error {
	_ = c.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		return nil
	case <-time.After(2 * time.Second):
	}
	_ = c.cmd.Process.Signal(syscallTERM)
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = c.cmd.Process.Kill()
		<-exited
	}
	return nil
}

type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
