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
