package mcpproto

import (
	"slices"
	"testing"
)

// Doctor's probe asks for a revision the server speaks.
func TestProbeVersionIsSpoken(t *testing.T) {
	if !slices.Contains(Versions, ProbeVersion) {
		t.Fatalf("probe version %s is not among the server's %v", ProbeVersion, Versions)
	}
}

// A handoff carrying the most it may fits one environment string (Linux:
// 128 KiB with its name), and comes back as it went.
func TestHandoffFitsTheEnvironment(t *testing.T) {
	pending := make([]byte, MaxPending)
	for i := range pending {
		pending[i] = byte(i) // not text: any bytes a client sent
	}
	h := Handoff{Initialized: true, Pending: pending}
	v := h.Encode()
	if n := len(HandoffEnv) + 1 + len(v); n >= 128<<10 {
		t.Fatalf("a full handoff is %d bytes in the environment, over Linux's 128 KiB a string", n)
	}
	got, err := DecodeHandoff(v)
	if err != nil || !got.Initialized || !slices.Equal(got.Pending, pending) {
		t.Fatalf("decoded %v %v", got.Initialized, err)
	}
	if _, err := DecodeHandoff("{"); err == nil {
		t.Fatal("a broken handoff was read")
	}
}
