package checkpoint

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"cx/internal/rollout"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func rollouts(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/rollouts/*/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded rollouts (%v)", err)
	}
	return files
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from golden:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Golden: the checkpoint JSON and the view of every recorded real rollout.
func TestGolden(t *testing.T) {
	for _, f := range rollouts(t) {
		rel := filepath.Join(filepath.Base(filepath.Dir(f)), strings.TrimSuffix(filepath.Base(f), ".jsonl"))
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cp := FromRollout(data, DefaultCaps)
			golden(t, rel+".checkpoint.json", cp.JSON())
			golden(t, rel+".view.txt", []byte(View(cp, DefaultViewCaps, nil)))
		})
	}
}

// Same bytes in, same bytes out: twice, and across incremental reads split
// at many points (as Stop hooks would read a growing file).
func TestDeterminism(t *testing.T) {
	for _, f := range rollouts(t) {
		data, _ := os.ReadFile(f)
		a, b := FromRollout(data, DefaultCaps).JSON(), FromRollout(data, DefaultCaps).JSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two reductions differ", f)
		}
		full := rollout.Assemble(data, rollout.Options{MaxToolChars: 4000})
		for _, split := range []int{1, len(data) / 7, len(data) / 3, len(data) / 2, len(data) - 10} {
			turns := incremental(t, data, split)
			if len(turns) != len(full.Turns) {
				t.Fatalf("%s split %d: %d turns, want %d", f, split, len(turns), len(full.Turns))
			}
			for i := range turns {
				if turns[i].Key != full.Turns[i].Key || turns[i].User != full.Turns[i].User || len(turns[i].Tools) != len(full.Turns[i].Tools) || turns[i].Complete != full.Turns[i].Complete {
					t.Fatalf("%s split %d turn %d: %+v vs %+v", f, split, i, turns[i], full.Turns[i])
				}
			}
		}
	}
}

// incremental writes data in two steps, reading after each, and merges the
// turns by key the way the ledger does (a re-read turn replaces its
// earlier, open version).
func incremental(t *testing.T, data []byte, split int) []rollout.Turn {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(p, data[:split], 0o600); err != nil {
		t.Fatal(err)
	}
	var order []string
	byKey := map[string]rollout.Turn{}
	add := func(c rollout.Capture) {
		for _, tr := range c.Turns {
			if _, ok := byKey[tr.Key]; !ok {
				order = append(order, tr.Key)
			}
			byKey[tr.Key] = tr
		}
	}
	c1, err := rollout.CaptureFile(p, rollout.Cursor{}, nil, rollout.Options{MaxToolChars: 4000})
	if err != nil {
		t.Fatal(err)
	}
	add(c1)
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o600)
	f.Write(data[split:])
	f.Close()
	c2, err := rollout.CaptureFile(p, c1.Cursor, c1.Meta, rollout.Options{MaxToolChars: 4000})
	if err != nil {
		t.Fatal(err)
	}
	add(c2)
	var out []rollout.Turn
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

func TestViewMarksSuspectFiles(t *testing.T) {
	data, err := os.ReadFile("../../testdata/rollouts/0.169.0/exec-tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cp := FromRollout(data, DefaultCaps)
	dir := t.TempDir()
	disk := OSDisk(dir)
	if v := View(cp, DefaultViewCaps, disk); !strings.Contains(v, "notes.txt (update) SUSPECT: cannot be read now") {
		t.Fatalf("missing file not suspect:\n%s", v)
	}
	// An added file whose content still matches the patch is not suspect.
	cp.Artifacts["file:notes.txt"] = Artifact{URI: "notes.txt", Kind: "file", Op: "add", Hash: rollout.ContentHash("first line\nsecond line\n")}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := View(cp, DefaultViewCaps, disk); strings.Contains(v, "notes.txt (add, hash=sha256:c2097f55f0) SUSPECT") {
		t.Fatalf("unchanged file marked suspect:\n%s", v)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("changed\n"), 0o644)
	if v := View(cp, DefaultViewCaps, disk); !strings.Contains(v, "SUSPECT: changed on disk since") {
		t.Fatalf("changed file not suspect:\n%s", v)
	}
}

func TestVague(t *testing.T) {
	for _, s := range []string{"continue", "Continue.", "run checks", "check it again", "  OK!  ", "go on", "Can you look into it?"} {
		if !IsVague(s) {
			t.Errorf("%q should be vague", s)
		}
	}
	for _, s := range []string{"fix the flaky test in parser_test.go", "continue with the migration of users table", "run checks on src/auth.py"} {
		if IsVague(s) {
			t.Errorf("%q is a real request", s)
		}
	}
}

func TestCapsEvictDeterministically(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"timestamp":"t","type":"session_meta","payload":{"id":"s","cwd":"/w"}}` + "\n")
	for i := 0; i < 40; i++ {
		b.WriteString(`{"timestamp":"t","type":"event_msg","payload":{"type":"task_started","turn_id":"t` + strconv.Itoa(i) + `"}}` + "\n")
		b.WriteString(`{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"task ` + strconv.Itoa(i) + `"}}` + "\n")
		b.WriteString(`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"c` + strconv.Itoa(i) + `","arguments":"{\"cmd\":\"make step` + strconv.Itoa(i) + `\"}"}}` + "\n")
		b.WriteString(`{"timestamp":"t","type":"event_msg","payload":{"type":"task_complete","turn_id":"t` + strconv.Itoa(i) + `"}}` + "\n")
	}
	caps := DefaultCaps
	caps.MaxArtifacts, caps.MaxRecentArtifacts = 10, 4
	cp := FromRollout([]byte(b.String()), caps)
	if len(cp.Artifacts) != 10 || len(cp.RecentArtifacts) != 4 || cp.RecentArtifacts[0] != "cmd:make step39" {
		t.Fatalf("artifacts %d recent %v", len(cp.Artifacts), cp.RecentArtifacts)
	}
	if _, ok := cp.Artifacts["cmd:make step30"]; !ok {
		t.Fatal("kept the wrong artifacts")
	}
	if cp.Task == nil || cp.Task.Text != "task 39" {
		t.Fatalf("task %+v", cp.Task)
	}
}

// The streamed reduction is the whole-file one, byte for byte.
func TestFromFileIsFromRollout(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/rollouts/*/*.jsonl")
	big := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(big, bigRollout(t, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(paths, big) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := FromFile(p, DefaultCaps)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := streamed.JSON(), FromRollout(data, DefaultCaps).JSON(); !bytes.Equal(got, want) {
			t.Errorf("%s: streamed checkpoint differs:\n%s\nwant:\n%s", p, got, want)
		}
	}
}
