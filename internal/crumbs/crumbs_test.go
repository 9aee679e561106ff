package crumbs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestMarkListRemove(t *testing.T) {
	home := t.TempDir()
	older := time.Unix(1_700_000_000, 5)
	newer := older.Add(time.Minute)
	if err := Mark(home, "/codex/home", Hook, newer, []string{"019a-2", "bad/id", "019a-1", ""}); err != nil {
		t.Fatal(err)
	}
	if err := Mark(home, "/other home", Run, older, nil); err != nil {
		t.Fatal(err)
	}
	// Files that are no breadcrumb are left alone.
	dir := filepath.Join(home, unrecordedDir)
	for _, junk := range []string{"notes.txt", "12-!!.run", "34-L2E.unknown"} {
		os.WriteFile(filepath.Join(dir, junk), nil, 0o600)
	}
	got := List(home)
	if len(got) != 2 {
		t.Fatalf("%d breadcrumbs, want 2: %+v", len(got), got)
	}
	if got[0].Kind != Run || got[0].CodexHome != "/other home" || !got[0].Started.Equal(older) || len(got[0].Threads) != 0 {
		t.Errorf("oldest first: %+v", got[0])
	}
	if got[1].Kind != Hook || got[1].CodexHome != "/codex/home" || !reflect.DeepEqual(got[1].Threads, []string{"019a-1", "019a-2"}) {
		t.Errorf("the hook's breadcrumb names its valid threads, sorted: %+v", got[1])
	}
	got[1].Remove()
	if left := List(home); len(left) != 1 || left[0].Kind != Run {
		t.Fatalf("after Remove: %+v", left)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "notes.txt" && e.Name() != "12-!!.run" && e.Name() != "34-L2E.unknown" && filepath.Ext(e.Name()) != ".run" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A CX_HOME where the folder cannot be made: Mark says so, List finds none.
func TestMarkUnwritable(t *testing.T) {
	home := filepath.Join(t.TempDir(), "file")
	os.WriteFile(home, nil, 0o600)
	if err := Mark(home, "/c", Run, time.Now(), []string{"x"}); err == nil {
		t.Error("no error for a CX_HOME that is a file")
	}
	if got := List(home); len(got) != 0 {
		t.Errorf("List: %+v", got)
	}
}
