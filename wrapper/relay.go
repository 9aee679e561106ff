package wrapper

import (
	"errors"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// relay copies one descriptor to a file. Pipelined (the PTY's output to the
// user's terminal), a reader and a writer each run on their own OS thread
// around a bounded set of buffers: the source is read
// while the destination is being written (a terminal that drains 4 KiB at
// a time no longer stops Codex's side while a 128 KiB write waits), and
// when every buffer waits to be written the reader stops reading, so
// memory stays bounded and the child feels the back-pressure it would
// without cx. The reader waits in poll(2) on the source and a wake-up pipe:
// that is what lets the copy stop on demand without O_NONBLOCK on a
// descriptor the shell shares (stdin), and keeps the Go scheduler and its
// netpoller out of the hot path. Not pipelined (keystrokes, the app-server's
// JSON-RPC), one thread reads and writes in turn: no hand-over between
// threads on the way of a small write.
//
// A non-blocking source is read until empty (or the buffer is full) before
// each hand-over, batching the kernel's small PTY reads into one write.
type relay struct {
	src      int
	dst      *os.File
	drain    bool // source is non-blocking: read until EAGAIN
	wakeR    int
	wakeW    int
	stopOnce sync.Once
	ok       bool
	before   func()       // called before each write (test hook)
	tap      func([]byte) // sees every byte relayed, after it was written
	guard    func()       // deferred first in the writer's goroutine (the supervisor's recover)
	// pipelined: the reader and the writer on threads of their own (the
	// PTY's output to the terminal); otherwise one thread does both.
	pipelined bool
	stopped   chan struct{}
	// keepReading: a failing destination does not end the relay (the child
	// must never block on a full PTY because the user's terminal is gone).
	keepReading bool
}

func newRelay(src int, dst *os.File) *relay {
	r := &relay{src: src, dst: dst, wakeR: -1, wakeW: -1, guard: func() {}, stopped: make(chan struct{})}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err == nil {
		r.wakeR, r.wakeW, r.ok = p[0], p[1], true
	}
	if fl, err := unix.FcntlInt(uintptr(src), unix.F_GETFL, 0); err == nil {
		r.drain = fl&unix.O_NONBLOCK != 0
	}
	return r
}

// Buffers of a relay: relayBuffers of relayBufSize each, in flight between
// the reader and the writer (128 KiB in all). Measured with script(1) as
// the outer terminal (scripts/bench-terminal.sh): 8 × 16 KiB relayed
// 32 MiB at 0.85–0.95× a second script(1), 4 × 128 KiB at 0.82–0.87×.
const (
	relayBuffers = 8
	relayBufSize = 16 << 10
)

// run copies until the source ends (EOF, EIO), the destination fails (unless
// keepReading), or stop is called. It returns once the writer has written
// what was read (or stop was called: what is still queued is dropped).
func (r *relay) run() {
	if !r.ok {
		return
	}
	if !r.pipelined {
		r.runSerial()
		return
	}
	free := make(chan []byte, relayBuffers)
	full := make(chan []byte, relayBuffers)
	for range relayBuffers {
		free <- make([]byte, relayBufSize)
	}
	dstFailed := make(chan struct{})
	writerDone := make(chan struct{})
	go r.write(full, free, dstFailed, writerDone)
	r.read(free, full, dstFailed)
	close(full)
	<-writerDone
}

// read is the reader: it fills free buffers from the source and hands them
// to the writer.
func (r *relay) read(free, full chan []byte, dstFailed chan struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer unix.Close(r.wakeR)
	fds := []unix.PollFd{{Fd: int32(r.src), Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
	failed := dstFailed
	for {
		var buf []byte
		select {
		case buf = <-free:
		case <-r.stopped:
			return
		case <-failed:
			if !r.keepReading {
				return
			}
			failed = nil // keep reading; the writer gives buffers back unwritten
			continue
		}
		ready, done := r.wait(fds)
		if done {
			return
		}
		if !ready {
			free <- buf
			continue
		}
		n, ended := r.fill(buf)
		if n > 0 {
			full <- buf[:n]
		} else {
			free <- buf
		}
		if ended {
			return
		}
	}
}

// write is the writer: it writes what the reader handed over, in order, and
// gives the buffers back. Once the destination fails it keeps giving them
// back unwritten (keepReading: the child must never block on a full PTY
// because the user's terminal is gone).
func (r *relay) write(full <-chan []byte, free chan<- []byte, dstFailed chan struct{}, done chan struct{}) {
	defer close(done)
	defer r.guard()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dstOK := true
	for b := range full {
		select {
		case <-r.stopped:
			dstOK = false // stopped: what is queued is dropped
		default:
		}
		if dstOK {
			if r.before != nil {
				r.before()
			}
			if _, err := r.dst.Write(b); err != nil {
				dstOK = false
				close(dstFailed)
			} else if r.tap != nil {
				r.tap(b)
			}
		}
		free <- b[:cap(b)]
	}
}

// runSerial is the relay on one thread, reading and writing in turn: the
// lowest latency for small, sparse writes (keystrokes, JSON-RPC frames).
func (r *relay) runSerial() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer unix.Close(r.wakeR)
	buf := make([]byte, 128<<10)
	fds := []unix.PollFd{{Fd: int32(r.src), Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
	dstOK := true
	for {
		ready, done := r.wait(fds)
		if done {
			return
		}
		if !ready {
			continue
		}
		n, ended := r.fill(buf)
		if n > 0 && dstOK {
			if r.before != nil {
				r.before()
			}
			if _, err := r.dst.Write(buf[:n]); err != nil {
				if !r.keepReading {
					return
				}
				dstOK = false
			}
			if r.tap != nil {
				r.tap(buf[:n])
			}
		}
		if ended {
			return
		}
	}
}

// wait polls the source and the wake pipe: ready when the source can be
// read (or has ended), done when the relay is to stop (woken, or poll
// failed for good).
func (r *relay) wait(fds []unix.PollFd) (ready, done bool) {
	fds[0].Revents, fds[1].Revents = 0, 0
	if _, err := unix.Poll(fds, -1); err != nil {
		return false, !errors.Is(err, unix.EINTR)
	}
	if fds[1].Revents != 0 {
		return false, true
	}
	return fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0, false
}

// fill fills buf from the source: once, or until empty for a non-blocking
// source. ended reports EOF or an error other than EINTR/EAGAIN.
func (r *relay) fill(buf []byte) (n int, ended bool) {
	for n < len(buf) {
		m, err := unix.Read(r.src, buf[n:])
		switch {
		case m > 0:
			n += m
			if !r.drain {
				return n, false
			}
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return n, false
		default: // EOF (0, nil), EIO from a PTY whose child side closed, …
			return n, true
		}
	}
	return n, false
}

func (r *relay) stop() {
	r.stopOnce.Do(func() {
		close(r.stopped)
		if r.ok {
			_, _ = unix.Write(r.wakeW, []byte{0})
			unix.Close(r.wakeW)
		}
	})
}
