package hookcfg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"cx/internal/codex"
	"cx/internal/fsutil"
	"cx/internal/health"
	"cx/internal/mcpproto"
)

// MCPName is the name cx's MCP server is registered under in Codex.
const MCPName = mcpproto.Name

// FrontName is the MCP front's file name: cx's releases put it beside cx
// (cmd/cx-mcp).
const FrontName = "cx-mcp"

// MCPServer is the registration of this cx's MCP server, told which
// CX_HOME to search (Codex starts MCP servers with a reduced environment):
// the front beside cx when it is there — it answers the handshake and the
// tool list, which is all most sessions ask, and hands the stream to
// `cx ctl mcp` on the first tool call (internal/mcpfront) — else `cx mcp`.
func (in *Installer) MCPServer() codex.MCPServer {
	if front, ok := beside(in.CXPath, FrontName); ok {
		return codex.MCPServer{Command: front, Env: map[string]string{"CX_HOME": in.CXHome}}
	}
	return codex.MCPServer{Command: in.CXPath, Args: []string{"mcp"}, Env: map[string]string{"CX_HOME": in.CXHome}}
}

// mcpDiffers says how a registration differs from this cx's in what
// matters — the executable (by file identity, so a symlink or a second
// path to the same binary is the same cx), its arguments, the CX_HOME it
// is given — or "" when it does not.
func mcpDiffers(have, want codex.MCPServer) string {
	if !sameExecutable(have.Command, want.Command) || !slices.Equal(have.Args, want.Args) {
		return fmt.Sprintf("Codex's %q server runs %s %v, not this cx (%s)", MCPName, have.Command, have.Args, want.Command)
	}
	if h, w := have.Env["CX_HOME"], want.Env["CX_HOME"]; h != w {
		if h == "" {
			h = "the default (~/.cx)"
		}
		return fmt.Sprintf("Codex's %q server is this cx but reads the archive in CX_HOME %s, not %s (this CX_HOME): install again to point it here", MCPName, h, w)
	}
	for k, v := range have.Env {
		if k != "CX_HOME" && want.Env[k] != v {
			return fmt.Sprintf("Codex's %q server is this cx but runs with %s=%s", MCPName, k, v)
		}
	}
	return ""
}

// sameExecutable reports whether two paths name the same file.
func sameExecutable(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// isOurMCP reports whether a registration is some cx's MCP server.
func isOurMCP(s codex.MCPServer) bool {
	return len(s.Args) == 1 && s.Args[0] == "mcp" && strings.HasSuffix(s.Command, "/cx") ||
		len(s.Args) == 0 && strings.HasSuffix(s.Command, "/"+FrontName)
}

// InstallMCP registers cx's MCP server with Codex: through `codex mcp add`
// where Codex has it, else as a table appended to config.toml. It reports
// whether anything changed.
func (in *Installer) InstallMCP(ctx context.Context) (bool, error) {
	want := in.MCPServer()
	if in.Codex != "" && in.MCPCommands {
		have, found, err := codex.MCPGet(ctx, in.Codex, in.CodexEnv, MCPName)
		if err != nil {
			return false, err
		}
		if found && have.Equal(want) {
			return false, nil
		}
		if found && !isOurMCP(have) {
			return false, fmt.Errorf("an MCP server named %q is already in Codex (%s): not replacing it", MCPName, have.Command)
		}
		return true, codex.MCPAdd(ctx, in.Codex, in.CodexEnv, MCPName, want)
	}
	return in.editMCPTable(func(text string) (string, bool) {
		if strings.Contains(text, "\n["+mcpTable+"]") || strings.HasPrefix(text, "["+mcpTable+"]") {
			return text, false // there already (edit it by hand, or let a Codex with `mcp add` replace it)
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return text + "\n" + mcpTableText(want), true
	})
}

// UninstallMCP removes cx's MCP server, and only cx's, from Codex.
func (in *Installer) UninstallMCP(ctx context.Context) (bool, error) {
	if in.Codex != "" && in.MCPCommands {
		have, found, err := codex.MCPGet(ctx, in.Codex, in.CodexEnv, MCPName)
		if err != nil || !found || !isOurMCP(have) {
			return false, err
		}
		return true, codex.MCPRemove(ctx, in.Codex, in.CodexEnv, MCPName)
	}
	return in.editMCPTable(func(text string) (string, bool) {
		out := dropTables(text, map[string]bool{"[" + mcpTable + "]": true, "[" + mcpTable + ".env]": true})
		return out, out != text
	})
}

const mcpTable = "mcp_servers." + MCPName

func mcpTableText(s codex.MCPServer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\ncommand = %s\nargs = [", mcpTable, strconv.Quote(s.Command))
	for i, a := range s.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString("]\n")
	if len(s.Env) > 0 {
		fmt.Fprintf(&b, "\n[%s.env]\n", mcpTable)
		for k, v := range s.Env {
			fmt.Fprintf(&b, "%s = %s\n", k, strconv.Quote(v))
		}
	}
	return b.String()
}

// editMCPTable applies a line edit to config.toml, keeping everything else
// byte for byte, and refuses a result that does not parse.
func (in *Installer) editMCPTable(edit func(string) (string, bool)) (bool, error) {
	data, err := os.ReadFile(in.ConfigPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	out, changed := edit(string(data))
	if !changed {
		return false, nil
	}
	var v map[string]any
	if _, err := toml.Decode(out, &v); err != nil {
		return false, fmt.Errorf("%s would not parse after the edit (left as it was): %w", in.ConfigPath(), err)
	}
	return true, fsutil.WriteAtomic(in.ConfigPath(), []byte(out), 0o600)
}

// MCPCheck is doctor's finding on cx's MCP server: registered with Codex
// for this cx binary, and answering — started the way Codex starts it, it
// completes the MCP handshake, lists its tools and answers a tool's call.
func (in *Installer) MCPCheck(ctx context.Context) health.Check {
	c := health.Check{Name: "mcp server"}
	want, later := in.MCPServer(), ""
	if in.Codex != "" && in.MCPCommands {
		have, found, err := codex.MCPGet(ctx, in.Codex, in.CodexEnv, MCPName)
		switch {
		case err != nil:
			c.Detail = err.Error()
			return c
		case !found:
			c.Detail, c.Fix = "Codex has no MCP server named "+MCPName+" (search from inside Codex is off)", "cx ctl install"
			return c
		case !have.Equal(want):
			c.Detail, c.Fix = mcpDiffers(have, want), "cx ctl install"
			if c.Detail == "" {
				break
			}
			// This cx registered as it was before its front (`cx mcp`):
			// it works, and an install registers the front.
			if old := (codex.MCPServer{Command: in.CXPath, Args: []string{"mcp"}, Env: want.Env}); want.Command != old.Command && mcpDiffers(have, old) == "" {
				want, later = have, "; registered as `cx mcp`, which starts cx for every session: `cx ctl install` registers its front, "+FrontName+", which starts cx only for a tool's call"
				c.Detail, c.Fix = "", ""
				break
			}
			return c
		}
	} else {
		data, _ := os.ReadFile(in.ConfigPath())
		if !strings.Contains(string(data), "["+mcpTable+"]") {
			c.Detail, c.Fix = in.ConfigPath()+" has no ["+mcpTable+"]", "cx ctl install"
			return c
		}
	}
	tools, err := probeMCP(ctx, want)
	if err != nil {
		c.Detail, c.Fix = "registered, but `cx mcp` did not answer: "+err.Error(), "cx ctl install, then cx ctl doctor"
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("registered as %q; answers with tools %s%s", MCPName, strings.Join(tools, ", "), later)
	return c
}

// probeMCP starts the server, initializes it, lists its tools and calls
// one.
func probeMCP(ctx context.Context, s codex.MCPServer) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c, err := codex.StartRPC(cmd, "the server", mcpproto.JSONRPC)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Call(ctx, "initialize", map[string]any{"protocolVersion": mcpproto.ProbeVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "cx-doctor", "version": "1"}}, nil); err != nil {
		return nil, err
	}
	if err := c.Notify("notifications/initialized", nil); err != nil {
		return nil, err
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := c.Call(ctx, "tools/list", map[string]any{}, &list); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Tools))
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	// A tool's call is cx's own to answer (the front registered hands the
	// stream over): one that finds nothing still answers.
	var call struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := c.Call(ctx, mcpproto.CallMethod, map[string]any{"name": "session", "arguments": map[string]any{"id": health.DoctorPrefix + "probe"}}, &call); err != nil {
		return nil, fmt.Errorf("a tool's call: %w", err)
	}
	if len(call.Content) == 0 {
		return nil, fmt.Errorf("a tool's call was answered with no content")
	}
	return names, nil
}
