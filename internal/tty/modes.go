package tty

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Modes follows, from the bytes a program writes to its terminal, the
// terminal modes it turned on that outlive it when it dies without
// turning them off: the alternate screen, mouse and focus reporting,
// alternate scroll, application cursor keys, a hidden cursor, and the
// kitty keyboard protocol's pushed flags. Reset is what turns exactly
// those off again — never a mode the program did not set, so what a shell
// set since is left alone.
//
// Bracketed paste (2004) is not followed: shells set it themselves at
// every prompt, and turning it off could undo theirs.
type Modes struct {
	mu    sync.Mutex
	carry []byte       // an escape sequence cut by a read, kept for the next
	on    map[int]bool // private modes (DECSET numbers) the program set
	kitty []string     // kitty keyboard flags pushed and not popped, oldest first
}

// followed are the DECSET modes Modes follows; hidden cursor is 25 off.
var followed = map[int]bool{1: true, 25: true, 47: true, 1000: true, 1002: true, 1003: true, 1004: true, 1005: true,
	1006: true, 1007: true, 1015: true, 1047: true, 1049: true}

// maxSeq bounds an escape sequence kept across reads: longer is not one
// of the sequences followed.
const maxSeq = 64

// Observe reads bytes the program wrote, in order, from one goroutine; it
// reports whether what Reset would write changed.
func (m *Modes) Observe(b []byte) bool {
	if len(m.carry) == 0 && bytes.IndexByte(b, 0x1b) < 0 {
		return false // the common case: text without escapes, no lock
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.reset()
	if len(m.carry) > 0 {
		b = append(m.carry, b...)
		m.carry = nil
	}
	for {
		i := bytes.IndexByte(b, 0x1b)
		if i < 0 {
			break
		}
		b = b[i:]
		n, complete := m.sequence(b)
		if !complete {
			if len(b) < maxSeq {
				m.carry = append([]byte(nil), b...)
			}
			break
		}
		b = b[n:]
	}
	return !bytes.Equal(before, m.reset())
}

// sequence reads one escape sequence at b[0] (ESC): its length, and
// whether it is complete in b. Only CSI sequences are looked into.
func (m *Modes) sequence(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		return 1, true // not a CSI: skip the ESC
	}
	// CSI: parameters and intermediates, then a final byte 0x40–0x7e.
	for j := 2; j < len(b); j++ {
		c := b[j]
		if c >= 0x40 && c <= 0x7e {
			m.csi(b[2:j], c)
			return j + 1, true
		}
		if c < 0x20 || j >= maxSeq {
			return j, true // not a well-formed CSI: drop it
		}
	}
	return 0, false
}

func (m *Modes) csi(params []byte, final byte) {
	switch {
	case (final == 'h' || final == 'l') && len(params) > 0 && params[0] == '?':
		for _, p := range bytes.Split(params[1:], []byte{';'}) {
			n, err := strconv.Atoi(string(p))
			if err != nil || !followed[n] {
				continue
			}
			set := final == 'h'
			if n == 25 {
				set = !set // what outlives the program is a hidden cursor
			}
			if m.on == nil {
				m.on = map[int]bool{}
			}
			if set {
				m.on[n] = true
			} else {
				delete(m.on, n)
			}
		}
	case final == 'u' && len(params) > 0 && params[0] == '>':
		m.kitty = append(m.kitty, string(params[1:])) // push flags
	case final == 'u' && len(params) > 0 && params[0] == '<':
		n := 1
		if v, err := strconv.Atoi(string(params[1:])); err == nil && v > 0 {
			n = v
		}
		m.kitty = m.kitty[:max(0, len(m.kitty)-n)]
	}
}

// Reset is what turns off every mode the program set and left on; nil
// when there is none.
func (m *Modes) Reset() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reset()
}

func (m *Modes) reset() []byte {
	b := m.private(false)
	if len(m.kitty) > 0 {
		b = append(b, "\x1b[<"...)
		b = strconv.AppendInt(b, int64(len(m.kitty)), 10)
		b = append(b, 'u')
	}
	return b
}

// private writes the DECSET/DECRST sequences that turn the private modes
// on (set) or off again — the cursor's 25 the other way round, as what the
// program left is a hidden cursor — the alternate screen first: what
// follows applies to the screen it leaves or enters.
func (m *Modes) private(set bool) []byte {
	var b []byte
	for _, n := range []int{1049, 1047, 47, 1, 1000, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 25} {
		if !m.on[n] {
			continue
		}
		end := byte('l')
		if set != (n == 25) {
			end = 'h'
		}
		b = append(b, "\x1b[?"...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, end)
	}
	return b
}

// Restore is what turns back on the modes Reset turns off (a program
// suspended, then continued): the inverse of Reset, in the program's order
// — the alternate screen first, the keyboard flags pushed as they were.
func (m *Modes) Restore() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.private(true)
	for _, flags := range m.kitty {
		b = append(b, "\x1b[>"...)
		b = append(b, flags...)
		b = append(b, 'u')
	}
	return b
}

// LeavesScreen reports whether a Reset leaves an alternate screen: what a
// shell drew on it since is then out of sight.
func LeavesScreen(reset []byte) bool {
	return bytes.Contains(reset, []byte("\x1b[?1049l")) || bytes.Contains(reset, []byte("\x1b[?1047l")) || bytes.Contains(reset, []byte("\x1b[?47l"))
}

// NudgeSize makes the programs in fd's terminal's foreground draw their
// screen again: its size set one column narrower and back, two SIGWINCHs,
// the second with the size it had (a line editor redraws its line only
// when the size changed, readline's rl_resize_terminal).
func NudgeSize(fd int) error {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return fmt.Errorf("terminal size: %w", err)
	}
	if ws.Col < 2 {
		return nil
	}
	narrower := *ws
	narrower.Col--
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &narrower); err != nil {
		return fmt.Errorf("terminal size: %w", err)
	}
	time.Sleep(20 * time.Millisecond) // each change seen on its own
	return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws)
}
