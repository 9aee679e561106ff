//go:build unix

package tty

import (
	"errors"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// The leader gives the terminal back only while it is still cx's raw mode:
// restored from raw; left alone once a shell has set up its line editor
// (-icanon -echo, but signals and output processing on).
func TestRestoreTermiosIfRaw(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	defer slave.Close()
	fd := int(slave.Fd())
	orig, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	saved := EncodeTermios(orig)
	lflag := func() uint32 {
		now, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(now.Lflag)
	}

	// Still raw: restored.
	if _, err := term.MakeRaw(fd); err != nil {
		t.Fatal(err)
	}
	if err := RestoreTermiosIfRaw(fd, saved); err != nil {
		t.Fatalf("from raw: %v", err)
	}
	if lflag()&unix.ICANON == 0 || lflag()&unix.ECHO == 0 {
		t.Fatal("from raw: canonical mode and echo not restored")
	}

	// A shell's line editor set up after raw mode: left as it is.
	if _, err := term.MakeRaw(fd); err != nil {
		t.Fatal(err)
	}
	editor := *orig
	editor.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &editor); err != nil {
		t.Fatal(err)
	}
	if err := RestoreTermiosIfRaw(fd, saved); !errors.Is(err, ErrNotRaw) {
		t.Fatalf("over a line editor's settings: %v, want ErrNotRaw", err)
	}
	if lflag()&(unix.ICANON|unix.ECHO) != 0 {
		t.Fatal("the line editor's settings were undone")
	}
}
