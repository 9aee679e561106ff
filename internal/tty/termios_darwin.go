package tty

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings; ioctlSetTermios sets them
// at once (tcsetattr TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// cbaud are the bits of Cflag that hold the line speed: none on macOS,
// which keeps the speeds apart.
const cbaud = 0
