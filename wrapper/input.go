package wrapper

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// inputRelay copies the user's stdin to the PTY. It waits in poll(2) on
// stdin and a wake-up pipe, so stop() ends it without leaving a goroutine
// blocked in read(0) that would swallow keystrokes typed after the child
// exited — and without setting O_NONBLOCK on a descriptor the shell shares.
type inputRelay struct {
	in       *os.File
	out      *os.File
	wakeR    int
	wakeW    int
	stopOnce sync.Once
	ok       bool
}

func newInputRelay(in, out *os.File) *inputRelay {
	r := &inputRelay{in: in, out: out, wakeR: -1, wakeW: -1}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err == nil {
		r.wakeR, r.wakeW, r.ok = p[0], p[1], true
	}
	return r
}

func (r *inputRelay) run() {
	if !r.ok {
		return
	}
	defer unix.Close(r.wakeR)
	fd := int(r.in.Fd())
	buf := make([]byte, 32<<10)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(r.wakeR), Events: unix.POLLIN}}
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
		n, err := unix.Read(fd, buf)
		if n > 0 {
			if _, werr := r.out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil || n == 0 {
			// EOF or a dead terminal: stop relaying input; the child goes on.
			return
		}
	}
}

func (r *inputRelay) stop() {
	r.stopOnce.Do(func() {
		if r.ok {
			_, _ = unix.Write(r.wakeW, []byte{0})
			unix.Close(r.wakeW)
		}
	})
}
