package codex

import (
	"testing"
	"time"
)

// How long discovery waits before its next look: soon while it learns or
// Codex is not yet recorded, backing off while nothing changes, and at
// once the slow interval once a watch wakes it for new threads and every
// thread known has its rollout; without a watch, settled or not, it backs
// off to 4 s.
func TestNextLook(t *testing.T) {
	const slow = 30 * time.Second
	watch := &ThreadWatch{}
	for _, c := range []struct {
		name                       string
		w                          *ThreadWatch
		learned, recorded, settled bool
		every, want                time.Duration
	}{
		{"learning", watch, true, true, false, 4 * time.Second, FastLook},
		{"nothing new backs off", watch, false, true, false, time.Second, 2 * time.Second},
		{"backs off to slow", watch, false, true, false, 20 * time.Second, slow},
		{"codex not recorded yet", watch, false, false, true, 8 * time.Second, FastLook},
		{"settled: the watch wakes it", watch, true, true, true, FastLook, slow},
		{"settled, nothing new", watch, false, true, true, time.Second, slow},
		{"no watch: settled is not enough", nil, true, true, true, time.Second, FastLook},
		{"no watch backs off to 4 s", nil, false, true, true, 3 * time.Second, 4 * time.Second},
	} {
		if got := c.w.NextLook(c.learned, c.recorded, c.settled, c.every); got != c.want {
			t.Errorf("%s: NextLook = %v, want %v", c.name, got, c.want)
		}
	}
}
