package e2e

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
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
			if users := typedTexts(g.users); len(users) > 0 {
				gens = append(gens, users)
			}
		}
		var archives [][]string
		for _, a := range c.ov.ArchiveUserTexts("cx-" + id) {
			if users := typedTexts(a); len(users) > 0 {
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

func TestTypedTexts(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", "chaos tui prompt 1."}, []string{"chaos tui prompt 1."}},
		{[]string{"# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>x</INSTRUCTIONS>", "<turn_aborted>\nThe user interrupted</turn_aborted>"}, nil},
		// Keys Codex read cut short are what the user gave it.
		{[]string{"ui prompt 12.", " chaos exec prompt 3."}, []string{"ui prompt 12.", " chaos exec prompt 3."}},
	} {
		if got := typedTexts(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("typedTexts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A repeat is explained only by a fault that struck the cx that ran one
// of its calls, named by pid or — its command started after that cx died,
// the shell's parent was already init — by the process group it left.
func TestExplainRepeat(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	c := &chaos{started: t0, struck: []struck{
		{at(10), "sweeper SIGKILL", []int{4242, -4242}},
		{at(20), "cx SIGKILL", []int{500, 501, -500, -77}},
		{at(30), "ledger locked", nil},
	}}
	for _, tc := range []struct {
		name  string
		calls []execCall
		want  string // "" for unexplained
	}{
		{"its cx killed, by pid", []execCall{{at(9), 4242}, {at(12), 900}}, "sweeper SIGKILL"},
		{"its cx dead before the shell, by group", []execCall{{at(10.1), -4242}, {at(20), 900}}, "sweeper SIGKILL"},
		{"a terminal's leader, by group", []execCall{{at(20.1), -500}, {at(25), 900}}, "cx SIGKILL"},
		{"a group no fault struck", []execCall{{at(10.1), -4243}, {at(12), 900}}, ""},
		{"another cx killed", []execCall{{at(19), 600}, {at(22), 900}}, ""},
		{"a success recorded on a locked ledger", []execCall{{at(31), 700}, {at(40), 900}}, "ledger locked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.explain(tc.calls, 1)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("explain = %q, want %q", got, tc.want)
			}
		})
	}
}
