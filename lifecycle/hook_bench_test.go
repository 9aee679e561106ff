package lifecycle

import (
	"fmt"
	"testing"

	"cx/internal/codex"
)

// BenchmarkHookTurn is the ledger's part of one turn's hooks where the
// ledger stays open (the hook host): a prompt and a stop of a known
// session of a Codex started without cx, the turn appended to its rollout
// between them, on a session of 20 turns. ns/op and allocs/op are the
// host's share of a turn beside what a hook's process costs; compare
// builds with benchstat.
func BenchmarkHookTurn(b *testing.B) {
	mc := newMachine(b)
	mc.hook(codex.HookSessionStart, "s1", source("startup"), "")
	for i := 0; i < 20; i++ {
		mc.turn("s1", fmt.Sprintf("change %d of the parser", i))
		mc.hook(codex.HookStop, "s1", nil, "")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mc.hook(codex.HookUserPromptSubmit, "s1", nil, "")
		mc.turn("s1", fmt.Sprintf("change %d of the parser", 20+i))
		mc.hook(codex.HookStop, "s1", nil, "")
	}
}
