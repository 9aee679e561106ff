package inject

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"cx/internal/checkpoint"
	"cx/internal/continuity"
	"cx/internal/rollout"
)

// BenchmarkInjectedSize is what cx spends of the model's context: for each
// recorded rollout (testdata/rollouts, real Codex 0.171, 0.169 and 0.128), its
// generation merged into fresh continuity files, then the block a resume of
// it gets (continuity and its checkpoint) and the block the next session
// in its project starts with, in characters, summed over the rollouts.
// Run it at two commits to compare (the figure is deterministic).
func BenchmarkInjectedSize(b *testing.B) {
	paths, _ := filepath.Glob("../testdata/rollouts/*/*.jsonl")
	if len(paths) == 0 {
		b.Fatal("no recorded rollouts")
	}
	var resume, start int
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		cp := checkpoint.FromRollout(data, checkpoint.DefaultCaps)
		turns := rollout.Assemble(data, rollout.Options{}).Turns
		home := b.TempDir()
		store := continuity.Store{Home: home}
		id := store.Identify(cp.Cwd)
		if _, _, err := store.Update(id, continuity.Evidence{SessionID: "s", EndReason: "exit", Turns: turns, Plan: cp.Plan.Steps, Goal: cp.Goal, Parent: cp.Parent}); err != nil {
			b.Fatal(err)
		}
		r := ForSessionStart(context.Background(), Request{Home: home, Source: "resume", SessionID: "s", Cwd: cp.Cwd, Checkpoint: &cp, Present: map[string]bool{}})
		s := ForSessionStart(context.Background(), Request{Home: home, Source: "startup", SessionID: "t", Cwd: cp.Cwd})
		resume += len([]rune(r))
		start += len([]rune(s))
	}
	b.ReportMetric(float64(resume), "resume-chars")
	b.ReportMetric(float64(start), "startup-chars")
	b.ReportMetric(float64(len(paths)), "rollouts")
}
