package wrapper

import (
	"errors"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// relay copies one descriptor to a file on its own OS thread, waiting in
// poll(2) on the source and a wake-up pipe. That is what lets the copy stop
// on demand without O_NONBLOCK on a descriptor the shell shares (stdin), and
// keeps the Go scheduler and its netpoller out of the hot path (a third of
// the context switches per byte of PTY output).
//
// A non-blocking source is read until empty before each write, batching the
// kernel's small PTY reads into one write.
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
	// keepReading: a failing destination does not end the relay (the child
	// must never block on a full PTY because the user's terminal is gone).
	keepReading bool
}

func newRelay(src int, dst *os.File) *relay {
	r := &relay{src: src, dst: dst, wakeR: -1, wakeW: -1}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err == nil {
		r.wakeR, r.wakeW, r.ok = p[0], p[1], true
	}
	if fl, err := unix.FcntlInt(uintptr(src), unix.F_GETFL, 0); err == nil {
		r.drain = fl&unix.O_NONBLOCK != 0
	}
	return r
}

// run copies until the source ends (EOF, EIO), the destination fails (unless
// keepReading), or stop is called.
func (r *relay) run() {
	if !r.ok {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer unix.Close(r.wakeR)
	buf := make([]byte, 128<<10)
	fds := []unix.PollFd{{Fd: int32(r.src), Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
	dstOK := true
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, ended := r.read(buf)
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

// read fills buf from the source: once, or until empty for a non-blocking
// source. ended reports EOF or an error other than EINTR/EAGAIN.
func (r *relay) read(buf []byte) (n int, ended bool) {
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
		if r.ok {
			_, _ = unix.Write(r.wakeW, []byte{0})
			unix.Close(r.wakeW)
		}
	})
}
