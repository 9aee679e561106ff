package rollout

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Codex's own structure, as real 0.171 rollouts hold it (recorded by
// internal/testing/e2e TestRecordRollouts): subagent threads and a thread
// goal.

func assembleFile(t *testing.T, name string) Capture {
	t.Helper()
	data, err := os.ReadFile("../../testdata/rollouts/0.171.0/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return Assemble(data, Options{})
}

func TestSubagentThreads(t *testing.T) {
	for _, tc := range []struct {
		parent, child string
		childTool     string
		trigger       string
	}{
		// v1: the task is a user message of the child's own.
		{"subagent-v1-a.jsonl", "subagent-v1-b.jsonl", "ls", ""},
		// v2, forked: the parent's history is copied in, the task is an
		// agent message (its payload encrypted).
		{"subagent-v2-fork-a.jsonl", "subagent-v2-fork-b.jsonl", "ls", TriggerAgent},
	} {
		t.Run(tc.child, func(t *testing.T) {
			p, c := assembleFile(t, tc.parent), assembleFile(t, tc.child)
			if p.Meta.Subagent() || p.Meta.ParentID != "" {
				t.Errorf("parent taken for a subagent: %+v", p.Meta)
			}
			if !c.Meta.Subagent() || c.Meta.ParentID != p.Meta.ID || c.Meta.Agent == "" {
				t.Errorf("child meta %+v, want the parent %s and a nickname", c.Meta, p.Meta.ID)
			}
			if len(c.Turns) != 1 {
				t.Fatalf("child turns %d, want its own one: %+v", len(c.Turns), c.Turns)
			}
			ct := c.Turns[0]
			if strings.Contains(ct.User, "flamingo") || ct.Trigger != tc.trigger {
				t.Errorf("child turn %q (trigger %q): the parent's prompt, or not its own task", ct.User, ct.Trigger)
			}
			if len(ct.Tools) != 1 || ct.Tools[0].Command != tc.childTool {
				t.Errorf("child tools %+v, want %q", ct.Tools, tc.childTool)
			}
			if len(p.Turns) != 1 || !strings.HasPrefix(p.Turns[0].User, "Investigate the flamingo parser bug") {
				t.Errorf("parent turns %+v", p.Turns)
			}
		})
	}
}

func TestThreadGoal(t *testing.T) {
	c := assembleFile(t, "goal.jsonl")
	if len(c.Turns) != 2 {
		t.Fatalf("turns %d, want the user's and the goal's: %+v", len(c.Turns), c.Turns)
	}
	user, cont := c.Turns[0], c.Turns[1]
	if user.Trigger != "" || user.Goal == nil || user.Goal.Objective != "Ship the flamingo parser rewrite with tests" || user.Goal.Status != "active" {
		t.Errorf("the user's turn: trigger %q goal %+v", user.Trigger, user.Goal)
	}
	if cont.Trigger != TriggerGoal || cont.User != "" || cont.Goal == nil || cont.Goal.Status != "complete" {
		t.Errorf("the goal's turn: trigger %q user %q goal %+v", cont.Trigger, cont.User, cont.Goal)
	}
	if len(cont.Tools) != 2 || cont.Tools[0].Command != "echo running the parser tests" || cont.Tools[1].Name != "update_goal" {
		t.Errorf("the goal's turn's tools %+v", cont.Tools)
	}
	if !cont.Complete {
		t.Error("the goal's turn is not complete")
	}
}

// A goal turn interrupted before it did anything leaves no turn, and its
// continuation message is never a prompt.
func TestEmptyGoalTurnLeavesNoTurn(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-11-26T10:00:00Z","type":"session_meta","payload":{"id":"01a218b3-3655-75d3-a704-c0e1fb269785","cwd":"/p"}}`,
		`{"timestamp":"2026-11-26T10:00:01Z","type":"event_msg","payload":{"type":"task_started","turn_attribution":{"turn_id":"01a218b3-4550-70f0-964c-b4870bc901c2","turn_trigger":"goal"},"turn_id":"01a218b3-4550-70f0-964c-b4870bc901c2"}}`,
		`{"timestamp":"2026-11-26T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<codex_internal_context source=\"goal\">\nContinue working toward the active thread goal."}]}}`,
		`{"timestamp":"2026-11-26T10:00:01Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"01a218b3-4550-70f0-964c-b4870bc901c2","reason":"interrupted"}}`,
	}
	c := Assemble([]byte(strings.Join(lines, "\n")+"\n"), Options{})
	if len(c.Turns) != 0 {
		t.Fatalf("turns %+v, want none", c.Turns)
	}
}

// A forked subagent's copy of its parent's history ends where its
// session_meta says (subagent_history_start_ordinal), whatever the copied
// records' turn ids and start times say: here they are no UUIDv7s and no
// times, so the time-based rule for a fork's copy could not tell them from
// the child's own.
func TestSubagentHistoryStartBoundsTheCopy(t *testing.T) {
	data, err := os.ReadFile("../../testdata/rollouts/0.171.0/subagent-v2-fork-b.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	meta, err := ReadMeta("../../testdata/rollouts/0.171.0/subagent-v2-fork-b.jsonl")
	if err != nil || meta.HistoryStart <= 0 {
		t.Fatalf("meta %+v, %v: no history start", meta, err)
	}
	idRE := regexp.MustCompile(`"(turn_id|root_turn_id)":"[0-9a-f-]{36}"`)
	startRE := regexp.MustCompile(`"started_at":\d+`)
	for i, l := range lines {
		if i > 0 && i < int(meta.HistoryStart) {
			lines[i] = startRE.ReplaceAllString(idRE.ReplaceAllString(l, `"$1":"copied-turn"`), `"started_at":0`)
		}
	}
	c := Assemble([]byte(strings.Join(lines, "\n")+"\n"), Options{})
	if len(c.Turns) != 1 || strings.Contains(c.Turns[0].User, "flamingo") || c.Turns[0].Trigger != TriggerAgent {
		t.Fatalf("turns %+v, want the child's own task alone", c.Turns)
	}
}
