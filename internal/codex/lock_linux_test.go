package codex

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A held lock the kernel's walk of /proc/locks skipped once (a lock let go
// meanwhile shifted the list) is found by the next look, not read as free;
// one absent from every look is free.
func TestLockSkippedOnceIsStillHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "thread.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	ino := fi.Sys().(*syscall.Stat_t).Ino
	line := fmt.Sprintf("1: FLOCK  ADVISORY  WRITE 4242 00:2a:%d 0 EOF\n", ino)
	other := "2: POSIX  ADVISORY  READ 77 00:2a:1 128 128\n"
	defer func(r func() ([]byte, error)) { readLocks = r }(readLocks)
	for _, c := range []struct {
		name  string
		reads []string
		held  bool
	}{
		{"found at once", []string{other + line}, true},
		{"skipped once", []string{other, other + line}, true},
		{"skipped twice", []string{other, other, line}, true},
		{"not there", []string{other, other, other, line}, false},
	} {
		n := 0
		readLocks = func() ([]byte, error) {
			r := c.reads[min(n, len(c.reads)-1)]
			n++
			return []byte(r), nil
		}
		pid, held := lockHolder(path)
		if held != c.held || (held && pid != 4242) {
			t.Errorf("%s: held %v by %d after %d reads, want %v", c.name, held, pid, n, c.held)
		}
	}
}
