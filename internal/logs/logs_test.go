package logs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := New(dir)
	big := bytes.Repeat([]byte("x"), 8<<20+10)
	os.MkdirAll(filepath.Dir(l.Path()), 0o700)
	os.WriteFile(l.Path(), big, 0o600)
	l.Printf("after rotation")
	if fi, err := os.Stat(l.Path() + ".1"); err != nil || fi.Size() != int64(len(big)) {
		t.Fatalf("old log not kept as .1: %v", err)
	}
	if data, _ := os.ReadFile(l.Path()); !strings.Contains(string(data), "after rotation") || len(data) > 200 {
		t.Fatalf("new log %q", data)
	}
}

func TestPrintfRedactsAndNilIsQuiet(t *testing.T) {
	t.Parallel()
	l := New(t.TempDir())
	l.Printf("failed with key %s", "sk-proj-"+strings.Repeat("a", 40))
	data, err := os.ReadFile(l.Path())
	if err != nil || strings.Contains(string(data), strings.Repeat("a", 40)) {
		t.Fatalf("log %q (%v): the key reached it", data, err)
	}
	var none *Logger
	none.Printf("nothing") // must not panic
	if none.Path() != "" {
		t.Fatal("a nil logger has a path")
	}
}
