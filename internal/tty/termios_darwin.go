package tty

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings; ioctlSetTermios sets them
// at once (tcsetattr TCSANOW).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
