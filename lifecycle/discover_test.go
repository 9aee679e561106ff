package lifecycle

import (
	"testing"
	"time"
)

// How long discovery waits before its next look: soon while it learns or
// Codex is not yet recorded, backing off while nothing changes, and at
// once the slow interval once a watch wakes it for new threads and every
// thread known has its rollout.
func TestNextLook(t *testing.T) {
	const slow = 30 * time.Second
	for _, c := range []struct {
		name                       string
		learned, recorded, settled bool
		every, want                time.Duration
	}{
		{"learning", true, true, false, 4 * time.Second, fastLook},
		{"nothing new backs off", false, true, false, time.Second, 2 * time.Second},
		{"backs off to slow", false, true, false, 20 * time.Second, slow},
		{"codex not recorded yet", false, false, true, 8 * time.Second, fastLook},
		{"settled: the watch wakes it", true, true, true, fastLook, slow},
		{"settled, nothing new", false, true, true, time.Second, slow},
	} {
		if got := nextLook(c.learned, c.recorded, c.settled, c.every, slow); got != c.want {
			t.Errorf("%s: nextLook = %v, want %v", c.name, got, c.want)
		}
	}
}

// Discovery is settled once it knows a thread and each thread it knows
// has its rollout: not before the first thread (a fresh Codex home's
// first lock may come before its folder is watched).
func TestDiscoverySettled(t *testing.T) {
	for _, c := range []struct {
		name  string
		paths map[string]string
		want  bool
	}{
		{"no thread yet", map[string]string{}, false},
		{"a thread by its lock alone", map[string]string{"a": ""}, false},
		{"a thread with its rollout", map[string]string{"a": "/r/a.jsonl"}, true},
		{"one of two without", map[string]string{"a": "/r/a.jsonl", "b": ""}, false},
		{"both with", map[string]string{"a": "/r/a.jsonl", "b": "/r/b.jsonl"}, true},
	} {
		r := &Run{known: map[string]bool{}, paths: c.paths}
		for id := range c.paths {
			r.known[id] = true
		}
		if got := r.settled(); got != c.want {
			t.Errorf("%s: settled %v, want %v", c.name, got, c.want)
		}
	}
}
