// Package fsutil holds the one atomic file write every writer of cx uses,
// the one file lock (Lock, LockContext, Held) for every lock cx takes, and
// Full, which tells a full disk behind a write's error.
package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// sync flushes a file or directory to disk (replaced in tests to count).
var sync = func(f *os.File) error { return f.Sync() }

// WriteAtomic replaces path with data durably: a temporary file in the same
// directory, written and fsynced, renamed over path, then the directory
// fsynced — so a reader sees the old bytes or the new ones, never a part,
// and a crash or power loss right after leaves one of the two whole (the
// user's hooks.json and config.toml are written this way). An existing
// file keeps its permissions; a new one gets mode.
func WriteAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := sync(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: open directory: %w", path, err)
	}
	defer d.Close()
	if err := sync(d); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}
