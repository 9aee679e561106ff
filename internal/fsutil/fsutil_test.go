package fsutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The new bytes are on disk before the rename, and the rename is on disk
// before WriteAtomic returns: the file, then its directory, are synced.
func TestWriteAtomicSyncsFileThenDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	var synced []string
	orig := sync
	sync = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		kind := "file"
		if fi.IsDir() {
			kind = "dir:" + f.Name()
		} else if b, _ := os.ReadFile(f.Name()); string(b) != "new" {
			t.Errorf("file synced before its bytes were written: %q", b)
		}
		synced = append(synced, kind)
		return orig(f)
	}
	defer func() { sync = orig }()
	if err := WriteAtomic(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[0] != "file" || synced[1] != "dir:"+dir {
		t.Fatalf("synced %v, want the file then %s", synced, dir)
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(b) != "new" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("content %q mode %v", b, fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".hooks.json.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// One lock for cx's processes: held, probed, waited for, abandoned.
func TestLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(p, false)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file: a second open in this process
	// contends like another process would.
	if _, err := Lock(p, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	if !Held(p) {
		t.Fatal("Held = false while locked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	if _, err := LockContext(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext while held: %v", err)
	}
	go func() { time.Sleep(50 * time.Millisecond); unlock() }()
	got, err := Lock(p, true)
	if err != nil {
		t.Fatal(err)
	}
	got()
	if Held(p) {
		t.Fatal("Held = true after unlock")
	}
	if Held(filepath.Join(t.TempDir(), "no", "dir", "x.lock")) {
		t.Fatal("Held = true for a path that cannot be opened")
	}
}

// A cache's write replaces the file whole and syncs nothing.
func TestWriteReplaceSyncsNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.window")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	orig := sync
	synced := 0
	sync = func(f *os.File) error { synced++; return orig(f) }
	defer func() { sync = orig }()
	if err := WriteReplace(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if string(b) != "new" || fi.Mode().Perm() != 0o640 || synced != 0 {
		t.Fatalf("content %q mode %v, %d syncs", b, fi.Mode().Perm(), synced)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".x.window.tmp-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
