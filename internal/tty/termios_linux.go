package tty

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings; ioctlSetTermios sets them
// at once (tcsetattr TCSANOW).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// cbaud are the bits of Cflag that hold the line speed (Linux keeps it
// there).
const cbaud = unix.CBAUD | unix.CBAUDEX
