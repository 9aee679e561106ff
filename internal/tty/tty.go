// Package tty holds the terminal helpers the supervisor needs: whether a
// descriptor is a terminal, its size, and raw mode with an idempotent restore.
package tty

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/mattn/go-isatty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// IsTerminal reports whether fd refers to a terminal.
func IsTerminal(fd uintptr) bool { return isatty.IsTerminal(fd) }

// Size is a terminal size in character cells.
type Size struct{ Rows, Cols uint16 }

// GetSize returns the size of the first of fds that is a terminal with a
// non-zero size, then of /dev/tty; ok is false when none has one.
func GetSize(fds ...uintptr) (Size, bool) {
	for _, fd := range fds {
		if s, err := sizeOf(int(fd)); err == nil && s.Rows > 0 && s.Cols > 0 {
			return s, true
		}
	}
	f, err := os.Open("/dev/tty")
	if err != nil {
		return Size{}, false
	}
	defer f.Close()
	if s, err := sizeOf(int(f.Fd())); err == nil && s.Rows > 0 && s.Cols > 0 {
		return s, true
	}
	return Size{}, false
}

func sizeOf(fd int) (Size, error) {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return Size{}, err
	}
	return Size{Rows: ws.Row, Cols: ws.Col}, nil
}

// Raw puts a terminal into raw mode and restores it. Restore is idempotent
// and safe from any goroutine; Raw may be called again after a Restore (job
// control: suspend restores, resume re-enters raw mode).
type Raw struct {
	fd    int
	mu    sync.Mutex
	saved *term.State
}

// NewRaw returns a Raw for fd; nothing changes until Enter.
func NewRaw(fd uintptr) *Raw { return &Raw{fd: int(fd)} }

// Enter switches the terminal to raw mode, remembering the state to restore.
func (r *Raw) Enter() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved != nil {
		return nil
	}
	st, err := term.MakeRaw(r.fd)
	if err != nil {
		return fmt.Errorf("make terminal raw: %w", err)
	}
	r.saved = st
	return nil
}

// Restore puts the terminal back as Enter found it; a no-op when not raw.
func (r *Raw) Restore() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved == nil {
		return nil
	}
	err := term.Restore(r.fd, r.saved)
	r.saved = nil
	if err != nil {
		return fmt.Errorf("restore terminal: %w", err)
	}
	return nil
}

// Unpolled returns f re-opened on a blocking duplicate descriptor that Go's
// network poller does not watch, and closes f. creack/pty hands back a PTY
// master the poller watches (edge-triggered): every burst the child writes,
// and every read cx makes, would wake a runtime thread for nothing, since
// cx's relays wait on the descriptor with poll(2) themselves — at 32 MiB of
// output, thousands of wake-ups and the context switches that come with
// them (strace -f: ~11,600 epoll_pwait calls on threads other than the
// relay's).
func Unpolled(f *os.File) (*os.File, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	nfd := -1
	var derr error
	if err := sc.Control(func(fd uintptr) { nfd, derr = unix.Dup(int(fd)) }); err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("dup pty master: %w", derr)
	}
	unix.CloseOnExec(nfd)
	if err := unix.SetNonblock(nfd, false); err != nil {
		unix.Close(nfd)
		return nil, fmt.Errorf("pty master blocking: %w", err)
	}
	name := f.Name()
	_ = f.Close()                              // its registration with the poller goes with it
	return os.NewFile(uintptr(nfd), name), nil // blocking: os.NewFile does not register it
}

// SetSize sets the window size of the terminal behind f without taking f
// out of non-blocking mode.
func SetSize(f *os.File, s Size) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	var ierr error
	if err := sc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: s.Rows, Col: s.Cols})
	}); err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	if ierr != nil {
		return fmt.Errorf("set terminal size: %w", ierr)
	}
	return nil
}

// KeysAreSignals reports whether the terminal on fd turns its interrupt
// character into a signal (ISIG: the program on it reads cooked — a TUI
// that has left raw mode to quit). A PTY master speaks for its slave.
// False when the terminal cannot be asked.
func KeysAreSignals(fd uintptr) bool {
	t, err := unix.IoctlGetTermios(int(fd), ioctlGetTermios)
	return err == nil && t.Lflag&unix.ISIG != 0
}

// Termios reads the settings of the terminal on fd (tcgetattr).
func Termios(fd uintptr) (*unix.Termios, error) {
	return unix.IoctlGetTermios(int(fd), ioctlGetTermios)
}

// EncodeTermios writes a terminal's settings as text, for another process
// of the same binary to restore (RestoreTermiosIfRaw): the supervisor's leader
// gives the user's terminal back when the supervisor dies in raw mode.
func EncodeTermios(t *unix.Termios) string {
	return hex.EncodeToString(unsafe.Slice((*byte)(unsafe.Pointer(t)), unsafe.Sizeof(*t)))
}

// decodeTermios reads settings EncodeTermios wrote.
func decodeTermios(encoded string) (unix.Termios, error) {
	var t unix.Termios
	b, err := hex.DecodeString(encoded)
	if err != nil || len(b) != int(unsafe.Sizeof(t)) {
		return t, fmt.Errorf("restore terminal: settings %q are not this binary's", encoded)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&t)), len(b)), b)
	return t, nil
}

// ErrNotRaw is a terminal that is no longer in the raw mode made from the
// saved settings: someone (the shell) has set it since, and it is theirs.
var ErrNotRaw = errors.New("the terminal left raw mode since: left as it is")

// RestoreTermiosIfRaw sets the terminal on fd to settings EncodeTermios
// wrote, only while it is still in the raw mode made from them (MakeRaw's):
// a shell whose job was killed restores its own settings and then sets up
// its line editor, and settings written after that would undo it (bash left
// in canonical mode with echo). A terminal set otherwise since is left alone
// (ErrNotRaw).
func RestoreTermiosIfRaw(fd int, encoded string) error {
	saved, err := decodeTermios(encoded)
	if err != nil {
		return err
	}
	now, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return fmt.Errorf("restore terminal: %w", err)
	}
	if !sameMode(*now, rawOf(saved)) {
		return ErrNotRaw
	}
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &saved); err != nil {
		return fmt.Errorf("restore terminal: %w", err)
	}
	return nil
}

// rawOf is t made raw as golang.org/x/term's MakeRaw makes it (cfmakeraw).
func rawOf(t unix.Termios) unix.Termios {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return t
}

// sameMode compares the mode flags and the read timing of two settings
// (not the speeds, which a driver may report its own way).
func sameMode(a, b unix.Termios) bool {
	return a.Iflag == b.Iflag && a.Oflag == b.Oflag && a.Lflag == b.Lflag && a.Cflag&^cbaud == b.Cflag&^cbaud &&
		a.Cc[unix.VMIN] == b.Cc[unix.VMIN] && a.Cc[unix.VTIME] == b.Cc[unix.VTIME]
}
