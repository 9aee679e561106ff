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
