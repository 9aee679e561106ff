package codex

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With no codex on PATH the error says so; "other than cx itself" only
// when cx was found under Codex's name (issue 52).
func TestResolveSaysWhyNone(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "cx")
	if err := os.WriteFile(self, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Resolve("", t.TempDir(), self)
	if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "other than cx itself") || !strings.Contains(err.Error(), "npm install -g @openai/codex") {
		t.Errorf("no codex anywhere: %v", err)
	}
	alias := t.TempDir()
	if err := os.Symlink(self, filepath.Join(alias, "codex")); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("", alias, self); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "other than cx itself") {
		t.Errorf("only cx as codex: %v", err)
	}
}
