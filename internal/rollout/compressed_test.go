package rollout

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdTool compresses src to dst with the zstd command, as a user or a
// script would; the test fails under CI=true without it.
func zstdTool(t *testing.T, src, dst string) {
	t.Helper()
	if _, err := exec.LookPath("zstd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("required under CI=true: the zstd command (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("no zstd command")
	}
	if out, err := exec.Command("zstd", "-q", "-19", "-o", dst, src).CombinedOutput(); err != nil {
		t.Fatalf("zstd: %v\n%s", err, out)
	}
}

// A compressed rollout (Codex's local_thread_store_compression) reads as
// its plain self: the same turns, meta and checkpoint-relevant counts,
// whether the zstd tool or a Go encoder wrote it; read again under the
// cursor it left, it has nothing new; a cursor from its plain sibling
// reads it from the start; a damaged one is an error, not an empty file.
func TestCompressedRolloutReadsAsPlain(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join("..", "..", "testdata", "rollouts", "0.169.0", "tui-compact-interrupt.jsonl")
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	byTool := filepath.Join(dir, "rollout-2026-11-22T01-32-39-tool.jsonl.zst")
	zstdTool(t, plain, byTool)
	byGo := filepath.Join(dir, "rollout-2026-11-22T01-32-39-go.jsonl.zst")
	enc, _ := zstd.NewWriter(nil)
	if err := os.WriteFile(byGo, enc.EncodeAll(data, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := CaptureFile(plain, Cursor{}, nil, Options{})
	if err != nil || len(want.Turns) == 0 {
		t.Fatalf("plain: %d turns, %v", len(want.Turns), err)
	}
	for _, p := range []string{byTool, byGo} {
		got, err := CaptureFile(p, Cursor{}, nil, Options{})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		if !reflect.DeepEqual(got.Turns, want.Turns) || got.Compactions != want.Compactions || got.Aborted != want.Aborted || got.Cursor.Offset != want.Cursor.Offset {
			t.Fatalf("%s: %d turns (offset %d), want %d (offset %d)", filepath.Base(p), len(got.Turns), got.Cursor.Offset, len(want.Turns), want.Cursor.Offset)
		}
		again, err := CaptureFile(p, got.Cursor, got.Meta, Options{})
		if err != nil || len(again.Turns) != 0 || again.Rewritten {
			t.Errorf("%s read again: %d turns, rewritten %v, %v", filepath.Base(p), len(again.Turns), again.Rewritten, err)
		}
		fromPlain, err := CaptureFile(p, want.Cursor, want.Meta, Options{})
		if err != nil || !fromPlain.Rewritten || len(fromPlain.Turns) != len(want.Turns) {
			t.Errorf("%s under its plain sibling's cursor: %d turns, rewritten %v, %v", filepath.Base(p), len(fromPlain.Turns), fromPlain.Rewritten, err)
		}
		m, err := ReadMeta(p)
		if err != nil || m.ID != want.Meta.ID {
			t.Errorf("%s meta: %+v, %v", filepath.Base(p), m, err)
		}
		n := 0
		if _, err := StreamFile(p, Options{}, func(Turn) { n++ }); err != nil || n != len(want.Turns) {
			t.Errorf("%s streamed: %d turns, %v", filepath.Base(p), n, err)
		}
	}
	damaged := filepath.Join(dir, "rollout-2026-11-22T01-32-39-bad.jsonl.zst")
	b, _ := os.ReadFile(byGo)
	b[len(b)/2] ^= 0xff
	os.WriteFile(damaged, b, 0o600)
	if _, err := CaptureFile(damaged, Cursor{}, nil, Options{}); err == nil {
		t.Error("a damaged compressed rollout read without an error")
	}
}
