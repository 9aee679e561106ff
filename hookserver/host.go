package hookserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"cx/internal/hookwire"
	"cx/internal/ledger"
	"cx/internal/logs"
)

// The hook host: the background sweeper's process also answers the hooks
// of its CX_HOME over a unix socket, so a hook's process (`cx ctl hook`)
// forwards its event and prints the answer instead of opening the ledger,
// parsing its schema and building the state machine each time; the host
// keeps one connection open, and the hooks of many sessions at once meet
// in one process instead of queueing on the ledger's lock with sleeps.
// The answer is the same code's (answer), on the same ledger: a hook the
// host cannot take (none runs, another build's, a test setting of the
// hook's process) is answered in its own process as before.

// exeIdentity names the executable this process runs (hookwire.Identity):
// "" when unknown.
func exeIdentity() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return hookwire.Identity(exe)
}

// host is a running hook host.
type host struct {
	home   string
	sock   string
	sockFI os.FileInfo // the socket file, to see it removed or replaced
	dbFI   os.FileInfo // the ledger file, to see it moved aside or replaced
	binary string
	db     *ledger.DB
	ln     net.Listener
	logger *logs.Logger

	// last is when the last hook was taken (Unix nanoseconds); taken, how
	// many it took.
	last, taken atomic.Int64
	// work and sweep ask the sweeper's loop for the jobs due or a sweep
	// (a hook found them due); stopped, to leave; entered wakes the watch
	// when a hook comes in flight.
	work, sweep, entered chan struct{}
	stopped              chan struct{}
	stopOnce             sync.Once

	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup
	dueBy    map[uint64]time.Time // each hook taken and not answered: its deadline
	nextID   uint64
}

// listenHost starts answering CX_HOME's hooks on db, the caller's writer
// connection (the caller holds the sweeper's place, so no other host
// listens there). It returns nil, logged, when it cannot listen.
func listenHost(home string, db *ledger.DB, logger *logs.Logger) *host {
	h := &host{home: home, sock: hookwire.SocketPath(home), binary: exeIdentity(), db: db, logger: logger,
		work: make(chan struct{}, 1), sweep: make(chan struct{}, 1), entered: make(chan struct{}, 1), stopped: make(chan struct{})}
	if h.binary == "" || !hookwire.Forwardable(os.Environ()) {
		// A process with a test setting of a hook's (a clock ahead, a
		// crash point) would apply it to every hook it took.
		return nil
	}
	_ = os.Remove(h.sock) // a host that died left it; none listens (we hold the place)
	ln, err := listenUnix(h.sock)
	if err != nil {
		logger.Printf("hook host: %v (hooks are answered by their own processes)", err)
		return nil
	}
	h.ln = ln
	h.sockFI, _ = os.Stat(h.sock)
	h.dbFI, _ = os.Stat(db.Path)
	h.last.Store(time.Now().UnixNano())
	go h.accept()
	go h.watch(os.Exit)
	return h
}

// listenUnix listens on a unix socket at sock, only this user's, whose
// path appears once it listens: a hook that sees the socket
// (hookwire.AwaitSocket) finds it taking connections. Listening where it
// is bound, the path would appear at bind, before listen, and a connect
// between the two is refused: a host preempted there on a busy machine
// left the hook that started it to answer itself. The socket is removed
// by close, and only while it is the host's.
func listenUnix(sock string) (net.Listener, error) {
	bound := sock + "~" // as short as a socket's address allows (SocketPath)
	_ = os.Remove(bound)
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", bound)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	listening()
	if err := os.Rename(bound, sock); err != nil {
		ln.Close()
		_ = os.Remove(bound)
		return nil, fmt.Errorf("put the socket in place: %w", err)
	}
	return ln, nil
}

// listening is called once the host listens, before its socket is in
// place: a test looks there.
var listening = func() {}

func (h *host) accept() {
	for {
		conn, err := h.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				h.logger.Printf("hook host: %v", err)
				h.stop()
			}
			return
		}
		go h.take(conn)
	}
}

// take reads one hook and answers it, or refuses it: the hook's process
// answers it itself.
func (h *host) take(conn net.Conn) {
	defer conn.Close()
	defer func() {
		if r := recover(); r != nil {
			h.logger.Printf("hook host: panic: %v\n%s", r, debug.Stack())
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, err := hookwire.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		_, _ = conn.Write([]byte{hookwire.Refused})
		return
	}
	if req.Stop {
		h.stop()
		_, _ = conn.Write([]byte{hookwire.Refused})
		return
	}
	id, ok := uint64(0), false
	// Another build's hook, or one whose test settings are not this
	// process's: its own process does it as its settings say.
	if req.Binary == h.binary && hookwire.SameSettings(req.Env, os.Getenv) {
		id, ok = h.enter(time.Unix(0, req.Start).Add(hookwire.Budget(req.Event)))
	}
	if !ok {
		_, _ = conn.Write([]byte{hookwire.Refused})
		return
	}
	defer h.leave(id)
	h.last.Store(time.Now().UnixNano())
	h.taken.Add(1)
	if _, err := conn.Write([]byte{hookwire.Taken}); err != nil {
		return // the hook's process is gone: it answered Codex itself
	}
	vars := make(map[string]string, len(req.Env))
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var out bytes.Buffer
	c := HookCall{Event: req.Event, Stdout: &out, PPID: req.PPID, Start: time.Unix(0, req.Start), ClientCPU: req.ClientCPU,
		Getenv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	if req.ArgErr != "" {
		c.ArgErr = errors.New(req.ArgErr)
	}
	var readErr error
	if req.ReadErr != "" {
		readErr = errors.New(req.ReadErr)
	}
	answer(context.Background(), c, req.Payload, readErr, h, false)
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(out.Bytes())
}

// enter counts a hook in, due by deadline, unless the host is leaving;
// leave(id) counts it out.
func (h *host) enter(deadline time.Time) (id uint64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return 0, false
	}
	h.inflight.Add(1)
	if h.dueBy == nil {
		h.dueBy = map[uint64]time.Time{}
	}
	if len(h.dueBy) == 0 {
		select { // the first in flight: the watch looks again
		case h.entered <- struct{}{}:
		default:
		}
	}
	h.nextID++
	h.dueBy[h.nextID] = deadline
	return h.nextID, true
}

func (h *host) leave(id uint64) {
	h.mu.Lock()
	delete(h.dueBy, id)
	h.mu.Unlock()
	h.inflight.Done()
}

// busy reports whether a hook the host took is in flight.
func (h *host) busy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.dueBy) > 0
}

// overdue is how far past its deadline, at now, the most overdue hook the
// host took and has not answered is (0 when none is past it). A hook answers within its budget
// whatever it meets (a locked ledger, a slow sink): one far past it is
// stuck, and so, for the hooks after it, is the host.
func (h *host) overdue(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var most time.Duration
	for _, d := range h.dueBy {
		most = max(most, now.Sub(d))
	}
	return most
}

// watch ends the host's process when a hook it took is stuckGrace past
// its deadline: its place (the sweep lock) goes with it, so the next
// hooks start another host or answer in their own processes, rather than
// each waiting for one that will not answer. Whatever the stuck hook was
// writing is a transaction the ledger rolls back.
//
// It looks once a second while a hook is in flight, and sleeps while none
// is (enter wakes it): an idle host has no ticker.
func (h *host) watch(exit func(int)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if !h.busy() {
			t.Stop()
			select {
			case <-h.stopped:
				return
			case <-h.entered:
			}
			t.Reset(time.Second)
		}
		select {
		case <-h.stopped:
			return
		case now := <-t.C:
			if late := h.overdue(now); late > stuckGrace {
				h.logger.Printf("hook host: a hook it took is %v past its budget: leaving (the next hooks are answered by their own processes or a new host)", late.Round(time.Second))
				exit(3)
				return
			}
		}
	}
}

// stuckGrace is how far past its budget a hook is taken to be stuck.
const stuckGrace = 10 * time.Second

// due asks the sweeper's loop for the jobs due, or a sweep.
func (h *host) due(sweep bool) {
	ch := h.work
	if sweep {
		ch = h.sweep
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stop makes the host leave: the sweeper's loop sees stopped.
func (h *host) stop() { h.stopOnce.Do(func() { close(h.stopped) }) }

// gone reports why the host should leave, if it should: asked to, its
// socket removed or replaced, its ledger moved aside or replaced (the
// connection it keeps would write a file no one reads), its executable
// replaced (an upgrade: the new build's hooks start a host of their own).
func (h *host) gone() string {
	select {
	case <-h.stopped:
		return "asked to stop"
	default:
	}
	switch {
	case !stillThere(h.sock, h.sockFI):
		return "its socket was removed"
	case !stillThere(h.db.Path, h.dbFI):
		return "the ledger was moved or replaced"
	case exeIdentity() != h.binary:
		return "its executable was replaced"
	}
	return ""
}

// stillThere reports whether path is still the file fi was (the same
// inode: a ledger's size and time change with every write).
func stillThere(path string, fi os.FileInfo) bool {
	now, err := os.Stat(path)
	return err == nil && fi != nil && os.SameFile(now, fi)
}

// idleFor is how long since the host last took a hook.
func (h *host) idleFor() time.Duration { return time.Since(time.Unix(0, h.last.Load())) }

// close stops taking hooks (their processes answer them from now on),
// removes the socket while it is the host's own, and waits for the hooks
// taken to be answered. The socket goes before the listener closes: a
// hook that comes meanwhile finds none and waits for this host to leave,
// then starts the next, where a socket still there but refusing would
// send it to its own process and leave CX_HOME without a host.
func (h *host) close() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	if stillThere(h.sock, h.sockFI) {
		_ = os.Remove(h.sock)
	}
	_ = h.ln.Close()
	h.inflight.Wait()
}
