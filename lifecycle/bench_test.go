package lifecycle_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"cx/internal/testing/codextest"
)

// BenchmarkHookLatency measures a Stop hook (process start to answer) on the
// local sink, against `node -e ”` — the floor of the Node.js hooks other
// memory plugins use — in the same run; it reports both medians.
func BenchmarkHookLatency(b *testing.B) {
	e := newEnv(b)
	e.run("start A; hook SessionStart A startup; turn A warm up; exit 0")
	rollouts, _ := filepath.Glob(filepath.Join(e.codexHome, "sessions", "*", "*", "*", "rollout-*-A.jsonl"))
	payload, _ := json.Marshal(map[string]any{"session_id": "A", "hook_event_name": "Stop", "transcript_path": rollouts[0], "cwd": e.w, "turn_id": "x"})
	node, nodeErr := exec.LookPath("node")
	runs := max(b.N, 40)
	var hook, nodeT []time.Duration
	b.ResetTimer()
	for i := 0; i < runs; i++ {
		cmd := exec.Command(e.cx, "ctl", "hook", "Stop")
		cmd.Env = e.environ()
		cmd.Stdin = bytes.NewReader(payload)
		start := time.Now()
		out, err := cmd.Output()
		hook = append(hook, time.Since(start))
		if err != nil || string(bytes.TrimSpace(out)) != "{}" {
			b.Fatalf("hook: %v %q", err, out)
		}
		if nodeErr == nil {
			start = time.Now()
			if err := exec.Command(node, "-e", "").Run(); err != nil {
				b.Fatal(err)
			}
			nodeT = append(nodeT, time.Since(start))
		}
	}
	b.ReportMetric(codextest.Ms(hook, 50), "hook-median-ms")
	if len(nodeT) > 0 {
		b.ReportMetric(codextest.Ms(nodeT, 50), "node-e-median-ms")
	}
}
