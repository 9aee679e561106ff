package wrapper

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// relay copies one descriptor to a file, in one of three ways.
//
// Polled (the PTY's output to the user's terminal, when cx can open that
// terminal again): one goroutine, neither side ever blocking — poll(2) waits
// for the source to be readable and the terminal to take more, writes go
// through a descriptor of cx's own with O_NONBLOCK, so the terminal drains
// its buffer while the source is read, with no hand-over between threads
// (see runPolled).
//
// Pipelined (the same, when the terminal cannot be opened again): a reader
// and a writer each on their own OS thread around a bounded set of
// buffers; when every buffer waits to be written the reader stops reading,
// so memory stays bounded and the child feels the back-pressure it would
// without cx.
//
// Serial (keystrokes, the app-server's JSON-RPC): one thread reads and
// writes in turn — no hand-over between threads on the way of a small
// write.
//
// Every reader waits in poll(2) on the source and a wake-up pipe: that is
// what lets the copy stop on demand without O_NONBLOCK on a descriptor the
// shell shares (stdin), and keeps the Go scheduler and its netpoller out of
// the hot path. A non-blocking source (the app-server's pipes; the PTY
// master is blocking, see tty.Unpolled) is read until empty, or the buffer
// is full, before each hand-over, batching small reads into one write.
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
	// dstNB, when not -1, is a descriptor of its own (O_NONBLOCK) on the
	// destination terminal: the relay then runs polled (see runPolled). It
	// is closed when the relay ends.
	dstNB int
}

func newRelay(src int, dst *os.File) *relay {
	r := &relay{src: src, dst: dst, wakeR: -1, wakeW: -1, dstNB: -1, guard: func() {}, stopped: make(chan struct{})}
	if rfd, wfd, err := cloexecPipe(); err == nil {
		r.wakeR, r.wakeW, r.ok = rfd, wfd, true
	}
	if fl, err := unix.FcntlInt(uintptr(src), unix.F_GETFL, 0); err == nil {
		r.drain = fl&unix.O_NONBLOCK != 0
	}
	return r
}

// Buffers of a pipelined relay: relayBuffers of relayBufSize each, in
// flight between the reader and the writer (128 KiB in all; the polled
// relay's one buffer is as large). Measured with script(1) as the outer
// terminal (scripts/bench-terminal.sh): 8 × 16 KiB relayed 32 MiB at
// 0.85–0.95× a second script(1), 4 × 128 KiB at 0.82–0.87×.
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
	if r.dstNB >= 0 {
		r.runPolled()
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

// cloexecPipe makes a pipe whose ends no child inherits. pipe2(2) would
// do it in one call on Linux but macOS has none; under syscall.ForkLock,
// as Go's own os/exec does there, no fork sees the ends before they are
// marked — one way on both systems.
func cloexecPipe() (r, w int, err error) {
	var p [2]int
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return p[0], p[1], nil
}

// openNonblocking opens the terminal f writes to again — a file
// description of cx's own, so O_NONBLOCK on it changes nothing for the
// shell that shares f's — and returns its descriptor; an error when f is
// not a terminal that can be opened so (the relay is pipelined then).
func openNonblocking(f *os.File) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return -1, errors.New("not a character device")
	}
	path, err := terminalPath(&st)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var again unix.Stat_t
	if err := unix.Fstat(fd, &again); err != nil || !sameNode(&again, &st) {
		unix.Close(fd)
		return -1, errors.New("the path names another terminal")
	}
	return fd, nil
}

// terminalDirs are where terminals have names: /dev/pts on Linux,
// /dev itself (ttysNNN) on macOS.
var terminalDirs = []string{"/dev/pts", "/dev"}

// terminalPath finds the name of the terminal st describes, as ttyname(3)
// does: the character device in /dev with the same node. Asking the
// device files, not /proc/self/fd (Linux only), is one way on both
// systems; matching the node, not only the device number, keeps a
// terminal of another devpts instance (a container's) from passing for it.
func terminalPath(st *unix.Stat_t) (string, error) {
	for _, dir := range terminalDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.Type()&fs.ModeCharDevice == 0 {
				continue
			}
			p := filepath.Join(dir, e.Name())
			var c unix.Stat_t
			if unix.Stat(p, &c) == nil && sameNode(&c, st) {
				return p, nil
			}
		}
	}
	return "", errors.New("no device file names this terminal")
}

// sameNode reports whether a and b are the same device node.
func sameNode(a, b *unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Rdev == b.Rdev
}

// runPolled is the relay on one goroutine with neither side ever blocking:
// poll(2) waits for the source to be readable (while there is room) and
// the terminal to take more (while something is queued), the source is
// read into a 128 KiB buffer and the terminal written without blocking,
// through a descriptor of cx's own. The terminal drains its buffer while
// the source is read, as with a reader and a writer thread, but with no
// hand-over between threads: poll(2) is the only call that waits.
func (r *relay) runPolled() {
	defer unix.Close(r.wakeR)
	defer unix.Close(r.dstNB)
	buf := make([]byte, relayBuffers*relayBufSize)
	start, end := 0, 0 // queued: buf[start:end]
	fds := []unix.PollFd{{Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}, {Events: unix.POLLOUT}}
	srcOpen, dstOK := true, true
	var sched schedPoint
	for {
		if !srcOpen && (start == end || !dstOK) {
			return
		}
		sched.pass()
		// A side not waited for is left out (-1), not polled for no events:
		// a terminal's poll registers on both its wait queues whatever the
		// events, so each time the user's terminal drained a little, the
		// relay would wake for nothing.
		fds[0].Fd, fds[2].Fd = -1, -1
		if srcOpen && end < len(buf) {
			fds[0].Fd = int32(r.src)
		}
		if start < end && dstOK {
			fds[2].Fd = int32(r.dstNB)
		}
		for i := range fds {
			fds[i].Revents = 0
		}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return // stopped: what is queued is dropped
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
			n, ended := r.fill(buf[end:])
			end += n
			srcOpen = !ended
		}
		if start < end && dstOK {
			n, err := r.writeNB(buf[start:end])
			start += n
			if err != nil {
				dstOK = false
				if !r.keepReading {
					return
				}
			}
			if !dstOK || start == end {
				start, end = 0, 0 // written, or nowhere to go: the space is free again
			} else if start >= len(buf)/2 {
				end = copy(buf, buf[start:end])
				start = 0
			}
		}
	}
}

// schedPoint lets a loop that only makes system calls pass through the Go
// scheduler now and then. Such a loop never does by itself, so after 10 ms
// the runtime's system monitor takes it for a goroutine that will not
// yield, and retakes its P on every 20 µs tick for as long as it streams —
// a thread woken 50,000 times a second on a machine whose two cores are
// busy relaying (measured: ~8,000 wake-ups per 32 MiB). A Gosched every
// few milliseconds keeps the monitor backing off, as for any other Go
// program.
type schedPoint struct{ last time.Time }

const schedEvery = 2 * time.Millisecond

func (s *schedPoint) pass() {
	now := time.Now()
	if now.Sub(s.last) >= schedEvery {
		s.last = now
		runtime.Gosched()
	}
}

// writeNB writes b to the non-blocking terminal until it is all written or
// the terminal is full (EAGAIN, not an error); the tap sees what was
// written.
func (r *relay) writeNB(b []byte) (int, error) {
	if r.before != nil {
		r.before()
	}
	n := 0
	for n < len(b) {
		m, err := unix.Write(r.dstNB, b[n:])
		if m > 0 {
			if r.tap != nil {
				r.tap(b[n : n+m])
			}
			n += m
		}
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return n, nil
		default:
			return n, err
		}
	}
	return n, nil
}

// runSerial is the relay on one thread, reading and writing in turn: the
// lowest latency for small, sparse writes (keystrokes, JSON-RPC frames).
// It has no schedPoint: its traffic comes in bursts far shorter than
// sysmon's 10 ms, and one added (unlocked, as in runPolled) moved neither
// the app-server's frame latency nor its 32 MiB frame beyond the noise.
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
