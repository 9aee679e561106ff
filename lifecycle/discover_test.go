package lifecycle

import "testing"

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
