package hookcfg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cx/internal/codex"
)

// Doctor compares a registration with this cx by what matters and says
// which part differs: the same binary under another path or a symlink is
// this cx; another CX_HOME is named as such, not as a foreign server.
func TestMCPDiffers(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cx")
	other := filepath.Join(dir, "other-cx")
	link := filepath.Join(dir, "link-cx")
	for _, p := range []string{bin, other} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	want := codex.MCPServer{Command: bin, Args: []string{"mcp"}, Env: map[string]string{"CX_HOME": "/home/u/work-cx"}}
	reg := func(cmd, home string) codex.MCPServer {
		s := codex.MCPServer{Command: cmd, Args: []string{"mcp"}, Env: map[string]string{}}
		if home != "" {
			s.Env["CX_HOME"] = home
		}
		return s
	}
	for _, tc := range []struct {
		name string
		have codex.MCPServer
		says string // "" when it is this cx, as configured
	}{
		{"same", reg(bin, "/home/u/work-cx"), ""},
		{"symlink to this cx", reg(link, "/home/u/work-cx"), ""},
		{"another CX_HOME", reg(bin, "/home/u/.cx"), "is this cx but reads the archive in CX_HOME /home/u/.cx, not /home/u/work-cx"},
		{"no CX_HOME", reg(bin, ""), "reads the archive in CX_HOME the default (~/.cx)"},
		{"another binary", reg(other, "/home/u/work-cx"), "runs " + other + " [mcp], not this cx"},
		{"other arguments", codex.MCPServer{Command: bin, Args: []string{"serve"}, Env: want.Env}, "not this cx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mcpDiffers(tc.have, want)
			if (tc.says == "") != (got == "") || !strings.Contains(got, tc.says) {
				t.Fatalf("mcpDiffers = %q, want %q", got, tc.says)
			}
		})
	}
}
