package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// shape is what the checker finds that no count of turns shows.
type shape struct {
	// helpers is sessions a sink holds that are no thread Codex wrote a
	// rollout for (0.169's title helper has none): none may be anywhere.
	helpers int
	// mixed is OpenViking archives that do not hold exactly one
	// generation's turns, and sessions with messages left uncommitted.
	mixed int
	// execMissed is generations the local sink archived that the exec sink
	// was never called for, or called for a generation no sink archived.
	execMissed int
	problems   []string
}

func (s *shape) fail(counter *int, format string, args ...any) {
	*counter++
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// chaosTexts keeps the prompts the workload sent.
func chaosTexts(texts []string) []string {
	var out []string
	for _, t := range texts {
		if strings.HasPrefix(t, "chaos ") {
			out = append(out, t)
		}
	}
	return out
}

// shapes checks the sinks against each other and against the rollouts,
// never against cx's ledger bookkeeping: every session a sink holds is a
// thread Codex recorded; each OpenViking archive of a session holds the
// turns the local sink archived for one generation, the k-th non-empty
// archive the k-th non-empty generation (a generation's turns appended
// after the next one's, or committed with them, show here); nothing the
// server was sent is left uncommitted; and the exec sink was called for
// exactly the generations the local sink archived.
func (c *chaos) shapes(threads map[string]bool, execGens map[string]map[int]bool) shape {
	var s shape
	local := archivedGenerations(c.t, c.h.CXHome)
	ids := map[string]bool{}
	for id := range local {
		ids[id] = true
		if !threads[id] {
			s.fail(&s.helpers, "the local archive holds %s, a thread with no rollout (a helper's?)", id)
		}
	}
	for _, ovID := range c.ov.IDs() {
		id := strings.TrimPrefix(ovID, "cx-")
		ss, _ := c.ov.Session(ovID)
		if len(ss.Messages) == 0 && len(ss.Archives) == 0 {
			continue // made, never written to
		}
		ids[id] = true
		if !threads[id] {
			s.fail(&s.helpers, "OpenViking holds %s, a thread with no rollout (a helper's?)", ovID)
		}
		if ss.Live > 0 {
			s.fail(&s.mixed, "OpenViking holds %d message(s) of %s never committed", ss.Live, ovID)
		}
	}
	for id := range execGens {
		ids[id] = true
		if !threads[id] {
			s.fail(&s.helpers, "the exec sink was called for %s, a thread with no rollout (a helper's?)", id)
		}
	}
	for id := range ids {
		var gens [][]string
		for _, g := range local[id] {
			if users := chaosTexts(g.users); len(users) > 0 {
				gens = append(gens, users)
			}
		}
		var archives [][]string
		for _, a := range c.ov.ArchiveUserTexts("cx-" + id) {
			if users := chaosTexts(a); len(users) > 0 {
				archives = append(archives, users)
			}
		}
		if !slices.EqualFunc(gens, archives, slices.Equal) {
			s.fail(&s.mixed, "%s: OpenViking's archives %q are not the local sink's generations %q", id, archives, gens)
		}
	}
	for id := range ids {
		var archived []int
		for _, g := range local[id] {
			archived = append(archived, g.generation)
		}
		var called []int
		for g := range execGens[id] {
			called = append(called, g)
		}
		sort.Ints(called)
		if !slices.Equal(archived, called) {
			s.fail(&s.execMissed, "%s: the exec sink was called for generations %v, the local sink archived %v", id, called, archived)
		}
	}
	sort.Strings(s.problems)
	return s
}
