package checkpoint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/redact"
	"cx/internal/rollout"
)

// foldReader is capture as the ledger runs it: each read from the cursor,
// the turns before the cursor's resume point folded once, the rest open.
type foldReader struct {
	path string
	cur  rollout.Cursor
	meta *rollout.SessionMeta
	fold *Fold
	open []rollout.Turn
}

func (r *foldReader) read(t *testing.T) {
	t.Helper()
	c, err := rollout.CaptureFile(r.path, r.cur, r.meta, rollout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Rewritten {
		t.Fatal("the file only grows")
	}
	if r.meta == nil && c.Meta != nil {
		r.meta = c.Meta
	}
	r.fold.Meta(c.Meta)
	r.fold.Count(c.Aborted, c.Compactions, len(c.Placeholders))
	r.open = r.open[:0]
	r.fold.AddRead(c.Turns, c.Goal, DefaultCaps, func(tu rollout.Turn) bool { return tu.Offset < c.Cursor.Offset })
	for _, tu := range c.Turns {
		if tu.Offset >= c.Cursor.Offset {
			r.open = append(r.open, tu)
		}
	}
	r.cur = c.Cursor
}

// The fold is the full reduction: for every recorded rollout of both Codex
// versions, grown line by line and in uneven chunks (cutting lines in
// two), the checkpoint from the fold and the open turns after each read
// is byte for byte FromRollout of the bytes written so far — and so is the
// fold reloaded from its JSON (as the ledger keeps it).
func TestFoldIsFullReduction(t *testing.T) {
	for _, f := range rollouts(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		for _, step := range []int{0, 97, 1531} { // 0: at every line end
			t.Run(name+"/step"+strings.Repeat("+", step%7), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "rollout.jsonl")
				r := &foldReader{path: path, fold: NewFold()}
				var splits []int
				if step == 0 {
					for i, b := range data {
						if b == '\n' {
							splits = append(splits, i+1)
						}
					}
				} else {
					for i := step; i < len(data); i += step {
						splits = append(splits, i)
					}
					splits = append(splits, len(data))
				}
				fh, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				defer fh.Close()
				prev := 0
				for _, k := range splits {
					if _, err := fh.Write(data[prev:k]); err != nil {
						t.Fatal(err)
					}
					prev = k
					r.read(t)
					want := FromRollout(data[:k], DefaultCaps).JSON()
					if got := r.fold.Checkpoint(DefaultCaps, r.open...).JSON(); !bytes.Equal(got, want) {
						t.Fatalf("after %d of %d bytes the fold differs:\n--- fold\n%s\n--- full\n%s", k, len(data), got, want)
					}
				}
				saved := r.fold.JSON()
				back, err := LoadFold(saved)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back.Checkpoint(DefaultCaps, r.open...).JSON(), FromRollout(data, DefaultCaps).JSON()) {
					t.Fatal("the fold reloaded from its JSON differs")
				}
			})
		}
	}
}

// Secrets never reach the fold (it is stored), and the checkpoint made from
// it redacts what the full reduction redacts: redaction is idempotent.
func TestFoldHoldsNoSecret(t *testing.T) {
	secret := "sk-proj-" + strings.Repeat("Ab3", 16)
	turn := rollout.Turn{Key: "t1", User: "deploy with " + secret, Plan: []rollout.PlanStep{{Step: "use " + secret, Status: "pending"}},
		Tools: []rollout.ToolCall{{Command: "curl -H 'Authorization: Bearer " + secret + "' x"}}}
	f := NewFold()
	f.Add(turn, DefaultCaps)
	if bytes.Contains(f.JSON(), []byte(secret)) {
		t.Fatalf("the fold keeps the secret:\n%s", f.JSON())
	}
	full := fromCapture(rollout.Capture{Turns: []rollout.Turn{turn}}, DefaultCaps).JSON()
	if !bytes.Equal(f.Checkpoint(DefaultCaps).JSON(), full) || bytes.Contains(full, []byte(secret)) {
		t.Fatalf("fold vs full:\n%s\n%s", f.Checkpoint(DefaultCaps).JSON(), full)
	}
	for _, s := range []string{secret, "token=" + secret, "Authorization: Bearer " + secret, "AWS_SECRET_ACCESS_KEY=abcdEFGH1234ijklMNOP5678qrstUVWX9012yzab"} {
		once := redact.String(s)
		if twice := redact.String(once); twice != once {
			t.Errorf("redact is not idempotent: %q → %q → %q", s, once, twice)
		}
	}
}
