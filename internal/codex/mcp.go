package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
)

// MCPServer is a stdio MCP server as Codex's config holds it
// ([mcp_servers.NAME]: command, args, and its env table).
type MCPServer struct {
	Command string
	Args    []string
	Env     map[string]string
}

// Equal reports whether two registrations start the same server.
func (s MCPServer) Equal(o MCPServer) bool {
	if s.Command != o.Command || !slices.Equal(s.Args, o.Args) || len(s.Env) != len(o.Env) {
		return false
	}
	for k, v := range s.Env {
		if o.Env[k] != v {
			return false
		}
	}
	return true
}

// HasMCPCommands reports whether this Codex manages its MCP servers itself
// (`codex mcp add|get|remove`: 0.128 and 0.169 both do). Codex writes
// config.toml with its own editor, which keeps comments and order.
func (c Caps) HasMCPCommands() bool { return slices.Contains(c.Subcommands, "mcp") }

// MCPGet reads a registered server (`codex mcp get NAME --json`); found is
// false when Codex has none by that name.
func MCPGet(ctx context.Context, codexPath string, env []string, name string) (s MCPServer, found bool, err error) {
	out, stderr, err := runCodex(ctx, codexPath, env, "mcp", "get", name, "--json")
	if err != nil {
		if strings.Contains(stderr, "No MCP server named") {
			return s, false, nil
		}
		return s, false, fmt.Errorf("codex mcp get %s: %w: %s", name, err, firstLine(stderr))
	}
	var v struct {
		Transport struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"transport"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return s, false, fmt.Errorf("codex mcp get %s: %w", name, err)
	}
	return MCPServer{Command: v.Transport.Command, Args: v.Transport.Args, Env: v.Transport.Env}, true, nil
}

// MCPAdd registers a stdio server (`codex mcp add NAME --env K=V -- CMD ARGS…`),
// replacing one of the same name.
func MCPAdd(ctx context.Context, codexPath string, env []string, name string, s MCPServer) error {
	args := []string{"mcp", "add", name}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		args = append(args, "--env", k+"="+s.Env[k])
	}
	args = append(append(args, "--", s.Command), s.Args...)
	if _, stderr, err := runCodex(ctx, codexPath, env, args...); err != nil {
		return fmt.Errorf("codex mcp add %s: %w: %s", name, err, firstLine(stderr))
	}
	return nil
}

// MCPRemove removes a registered server (`codex mcp remove NAME`); a name
// Codex does not have is not an error.
func MCPRemove(ctx context.Context, codexPath string, env []string, name string) error {
	if _, stderr, err := runCodex(ctx, codexPath, env, "mcp", "remove", name); err != nil && !strings.Contains(stderr, "No MCP server named") {
		return fmt.Errorf("codex mcp remove %s: %w: %s", name, err, firstLine(stderr))
	}
	return nil
}

func runCodex(ctx context.Context, codexPath string, env []string, args ...string) (stdout []byte, stderr string, err error) {
	cmd := exec.CommandContext(ctx, codexPath, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.Bytes(), errb.String(), err
}

// firstLine is the first line of Codex's stderr that says something (its
// PATH-alias warnings aside).
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "WARNING:") {
			return l
		}
	}
	return ""
}
