package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"
)

// chaosDaemon is a daemon's side of `cx app-server` in the chaos run: a
// JSON-RPC client that takes the server's death (a fault) as an error,
// never as a test failure.
type chaosDaemon struct {
	c   *chaos
	cmd *exec.Cmd
	*daemonConn
}

// daemonConn is a daemon's JSON-RPC over `cx app-server`'s stdio, for many
// goroutines at once (the threads of one daemon): answers by id, each
// thread's turn/completed by thread; the server's end is an error
// (errDaemonGone), never a test failure.
type daemonConn struct {
	in     io.WriteCloser
	wmu    sync.Mutex // one line at a time
	mu     sync.Mutex
	nextID int
	waits  map[float64]chan map[string]any
	turns  map[string]chan struct{} // thread id → its turn completed
	exited chan struct{}            // closed by the reader's caller once the server is gone
}

func newDaemonConn(in io.WriteCloser) *daemonConn {
	return &daemonConn{in: in, waits: map[float64]chan map[string]any{}, turns: map[string]chan struct{}{}, exited: make(chan struct{})}
}

// read hands out what the server writes, until it stops writing.
func (d *daemonConn) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		d.mu.Lock()
		if id, ok := m["id"].(float64); ok && m["method"] == nil {
			if ch := d.waits[id]; ch != nil {
				ch <- m
				delete(d.waits, id)
			}
		}
		if m["method"] == "turn/completed" {
			p, _ := m["params"].(map[string]any)
			if th, _ := p["threadId"].(string); d.turns[th] != nil {
				close(d.turns[th])
				delete(d.turns, th)
			}
		}
		d.mu.Unlock()
	}
}

var errDaemonGone = errors.New("app-server gone")

func (c *chaos) startDaemon() (*chaosDaemon, error) {
	cmd := exec.Command(c.h.CX, "app-server", "-c", "thread_unload_delay_secs=1")
	cmd.Dir = c.h.Work
	cmd.Env = c.env()
	cmd.SysProcAttr = ownGroup()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c.track(cmd)
	d := &chaosDaemon{c: c, cmd: cmd, daemonConn: newDaemonConn(in)}
	go func() {
		defer func() { _ = cmd.Wait(); c.untrack(cmd); close(d.exited) }()
		d.read(out)
	}()
	if _, err := d.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "chaos-daemon", "version": "1"}}); err != nil {
		return d, nil // died at once: the worker starts another
	}
	_ = d.send(map[string]any{"method": "initialized"})
	return d, nil
}

func (d *daemonConn) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

func (d *daemonConn) send(msg map[string]any) error {
	b, _ := json.Marshal(msg)
	d.wmu.Lock() // not mu: the reader must go on while a write waits
	defer d.wmu.Unlock()
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		return errDaemonGone
	}
	return nil
}

// call sends a request and waits (up to a minute) for its answer.
func (d *daemonConn) call(method string, params map[string]any) (map[string]any, error) {
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan map[string]any, 1)
	d.waits[float64(id)] = ch
	d.mu.Unlock()
	if err := d.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m["error"] != nil {
			return nil, fmt.Errorf("%s: %v", method, m["error"])
		}
		res, _ := m["result"].(map[string]any)
		return res, nil
	case <-d.exited:
		return nil, errDaemonGone
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s: no answer in a minute", method)
	}
}

// turn runs one turn of a thread to its end.
func (d *daemonConn) turn(thread, text string) error {
	done := make(chan struct{})
	d.mu.Lock()
	d.turns[thread] = done
	d.mu.Unlock()
	if _, err := d.call("turn/start", map[string]any{"threadId": thread, "input": []any{map[string]any{"type": "text", "text": text}}}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-d.exited:
		return errDaemonGone
	case <-time.After(time.Minute):
		return fmt.Errorf("turn of %s: not completed in a minute", thread)
	}
}

// stop closes the daemon's stdin (how a daemon ends its app-server) and
// waits for it, killing it after 30 s.
func (d *chaosDaemon) stop() {
	_ = d.in.Close()
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}
