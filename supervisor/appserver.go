package supervisor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"cx/internal/codex"
	"cx/internal/testpoint"
	"cx/lifecycle"
	"cx/wrapper"
)

// AppServerTap watches the newline-delimited JSON-RPC between a daemon and
// `codex app-server` (the wrapper relays the bytes; the tap only reads a
// copy) and drives the lifecycle the way hooks do in the TUI: threads
// started, resumed or forked are learned; each completed turn is captured
// from the rollout; a closed or unloaded thread ends its session
// (codex.AppServerFrames says which frame means what). The process's exit
// ends the rest.
// A frame it cannot parse is counted, never dropped from the stream.
type AppServerTap struct {
	run   *lifecycle.Run
	read  *codex.AppServerFrames
	bound chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []tapFrame
	queued  int // bytes in queue
	closing bool
	done    chan struct{}
	streams [2]tapStream

	unparsed atomic.Int64
	skipped  atomic.Int64 // frames over the bounds, relayed but not watched
	frames   atomic.Int64
	panics   atomic.Int64 // frames whose handling panicked (a bug; logged)
}

type tapFrame struct {
	fromChild bool
	line      []byte
}

// NewAppServerTap returns a tap; it processes frames once bound to a run.
func NewAppServerTap() *AppServerTap {
	t := &AppServerTap{bound: make(chan struct{}), done: make(chan struct{}), read: codex.NewAppServerFrames()}
	t.cond = sync.NewCond(&t.mu)
	go t.work()
	return t
}

// bind attaches the tap to its run (the ledger is opened beside Codex's
// launch; frames seen before wait). A nil run (no ledger) makes the tap
// count frames and record nothing.
func (t *AppServerTap) bind(r *lifecycle.Run) {
	t.run = r
	if r != nil {
		// What the app-server said before it exited counts: the run drains
		// the tap before it ends the sessions left.
		r.SetDrain(func() {
			t.Close()
			if n := t.Unparsed(); n > 0 {
				r.Logf("app-server tap of %s: %d of %d frames not JSON (relayed unchanged)", r.ID(), n, t.Frames())
			}
		})
	}
	close(t.bound)
}

// FromParent implements wrapper.Tap.
func (t *AppServerTap) FromParent(b []byte) { t.feed(0, b) }

// FromChild implements wrapper.Tap.
func (t *AppServerTap) FromChild(b []byte) { t.feed(1, b) }

// Frames, Unparsed, Skipped and Panics count what the tap saw.
func (t *AppServerTap) Frames() int64   { return t.frames.Load() }
func (t *AppServerTap) Unparsed() int64 { return t.unparsed.Load() }
func (t *AppServerTap) Skipped() int64  { return t.skipped.Load() }
func (t *AppServerTap) Panics() int64   { return t.panics.Load() }

// Bounds of what the tap holds, so relaying never costs more than the
// bytes: a frame longer than maxTapFrame is skipped by the tap (counted and
// logged; the relay passes it on whole), and complete frames waiting for
// the tap's worker past maxTapQueue bytes are dropped the same way rather
// than making the relay wait. The frames the tap acts on are small
// (thread/start results, notifications); a thread/resume result carries the
// whole history and its thread is learned from the hooks instead.
const (
	maxTapFrame = 4 << 20
	maxTapQueue = 16 << 20
)

// tapStream is one direction's frame in progress.
type tapStream struct {
	partial  []byte
	skipping bool // past maxTapFrame: its bytes are dropped up to its newline
}

// feed splits a chunk into complete lines as it arrives — each byte is
// looked at and copied once — and queues them for the worker; it never
// waits for the worker.
func (t *AppServerTap) feed(dir int, b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() {
		// The relay calls this: a bug here must not stop the stream (the
		// wrapper would stop Codex). The frame in progress is lost to the tap.
		if r := recover(); r != nil {
			t.unparsed.Add(1)
			t.streams[dir] = tapStream{}
		}
	}()
	st := &t.streams[dir]
	queued := false // the worker is woken only for frames it reads
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		piece := b
		if i >= 0 {
			piece = b[:i]
		}
		if !st.skipping {
			if len(st.partial)+len(piece) > maxTapFrame {
				st.skipping, st.partial = true, nil
				t.skipped.Add(1)
			} else {
				st.partial = append(st.partial, piece...)
			}
		}
		if i < 0 {
			break
		}
		switch {
		case st.skipping || len(bytes.TrimSpace(st.partial)) == 0:
			st.partial = st.partial[:0]
		case !codex.AppFrameMayMatter(dir == 1, st.partial):
			// Most frames (a streamed answer's deltas) mean nothing to the
			// tap: counted here, neither queued nor copied again, and the
			// worker is not woken for them.
			t.frames.Add(1)
			st.partial = st.partial[:0]
		case t.queued+len(st.partial) > maxTapQueue:
			t.skipped.Add(1)
			st.partial = nil
		default:
			t.queue = append(t.queue, tapFrame{fromChild: dir == 1, line: st.partial})
			t.queued += len(st.partial)
			queued = true
			st.partial = nil // the queue owns it now
		}
		st.skipping = false
		b = b[i+1:]
	}
	if queued {
		t.cond.Signal()
	}
}

// Close processes what is queued and stops the tap.
func (t *AppServerTap) Close() {
	t.mu.Lock()
	t.closing = true
	t.cond.Signal()
	t.mu.Unlock()
	select {
	case <-t.bound:
		<-t.done
	default:
	}
}

func (t *AppServerTap) work() {
	<-t.bound
	defer close(t.done)
	var logged int64
	for {
		t.mu.Lock()
		for len(t.queue) == 0 && !t.closing {
			t.cond.Wait()
		}
		q := t.queue
		t.queue, t.queued = nil, 0
		closing := t.closing
		t.mu.Unlock()
		for _, f := range q {
			t.safeFrame(f)
		}
		if n := t.skipped.Load(); n > logged && t.run != nil {
			t.run.Logf("app-server tap of %s: %d frame(s) over %d MiB (or past the tap's %d MiB queue) relayed but not watched",
				t.run.ID(), n, maxTapFrame>>20, maxTapQueue>>20)
			logged = n
		}
		if closing && len(q) == 0 {
			return
		}
	}
}

// safeFrame handles one frame; a bug in that (a panic) costs the frame,
// never the stream or the other frames.
func (t *AppServerTap) safeFrame(f tapFrame) {
	defer func() {
		if r := recover(); r != nil {
			t.panics.Add(1)
			if t.run != nil {
				t.run.Logf("app-server tap of %s: panic: %v\n%s", t.run.ID(), r, debug.Stack())
			}
		}
	}()
	t.frame(f)
}

func (t *AppServerTap) frame(f tapFrame) {
	t.frames.Add(1)
	testpoint.Panic("tap-frame")
	if t.run == nil {
		return // no ledger for this run: the stream is relayed, nothing recorded
	}
	ev, err := t.read.Read(f.fromChild, f.line)
	if err != nil {
		t.unparsed.Add(1)
		return
	}
	ctx := context.Background()
	switch ev.Kind {
	case codex.AppThreadStarted, codex.AppThreadResumed:
		t.run.LearnThread(ctx, ev.Thread, ev.Kind == codex.AppThreadResumed)
	case codex.AppTurnCompleted:
		t.run.TurnCompleted(ctx, ev.Thread.ID)
	case codex.AppThreadEnded:
		t.run.EndThread(ctx, ev.Thread.ID)
	}
}

// Configure sets up the run of Codex's app-server: the daemon's JSON-RPC
// is relayed byte for byte and watched by the tap; Codex's app-server ends
// every loaded thread itself, with its own SessionEnd hooks, when its stdin
// closes (measured: docs/behaviour.md, "As a daemon's Codex launcher"), so a
// stop signal asks for that first.
func (t *AppServerTap) Configure(spec *wrapper.Spec) {
	spec.Stop.CloseStdin = true
	spec.Tap = t
	if dir := testpoint.String(testpoint.TapLog); dir != "" {
		spec.Tap = teeTap(t, dir) // tests compare both sides of the relay
	}
}

// teeTap also writes what the tap sees to dir/from-parent and dir/from-child
// (CX_TEST_TAP_LOG: the app-server test compares them with the daemon's bytes).
func teeTap(t wrapper.Tap, dir string) wrapper.Tap {
	in, err1 := os.Create(filepath.Join(dir, "from-parent"))
	out, err2 := os.Create(filepath.Join(dir, "from-child"))
	if err1 != nil || err2 != nil {
		return t
	}
	return tee{t, in, out}
}

type tee struct {
	wrapper.Tap
	in, out *os.File
}

func (t tee) FromParent(b []byte) { _, _ = t.in.Write(b); t.Tap.FromParent(b) }
func (t tee) FromChild(b []byte)  { _, _ = t.out.Write(b); t.Tap.FromChild(b) }
