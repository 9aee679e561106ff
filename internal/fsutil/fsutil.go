// Package fsutil holds the atomic file writes every writer of cx uses
// (durable, and for caches without the syncs),
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
	return replace(path, data, mode, true)
}

// WriteReplace replaces path as WriteAtomic does — a reader sees the old
// bytes or the new ones — but syncs nothing: for a cache cx can make
// again (a recall window, Codex's probed capabilities), whose loss in a
// power cut costs a rebuild, while two fsyncs cost every write of it the
// journal's CPU (a fifth of the hook host's file work).
func WriteReplace(path string, data []byte, mode os.FileMode) error {
	return replace(path, data, mode, false)
}

func replace(path string, data []byte, mode os.FileMode, durable bool) error {
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
	if durable {
		if err := sync(tmp); err != nil {
			tmp.Close()
			return fmt.Errorf("write %s: sync: %w", path, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !durable {
		return nil
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
