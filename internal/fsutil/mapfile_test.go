package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A mapped file reads as written, and keeps reading so after the file is
// replaced (the replacement is the next mapping's); an empty or missing
// file is an error, not an empty mapping.
func TestMapFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w")
	if err := WriteReplace(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, unmap, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := WriteReplace(path, []byte("second, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if string(data) != "first" {
		t.Errorf("mapped %q, want the first contents", data)
	}
	again, unmapAgain, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != "second, longer" {
		t.Errorf("mapped %q after the replace", again)
	}
	unmapAgain()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := MapFile(path); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty file: %v, want ErrEmpty", err)
	}
	if _, _, err := MapFile(path + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want not exist", err)
	}
}
