// Command cx-mcp is cx's MCP server as Codex starts it (cx ctl install
// registers it, beside cx): it answers the handshake, ping and the tool
// list, which is all most sessions ask, without cx's start, and hands the
// stream to cx (`cx ctl mcp`, exec'd in its place) on the first tool call
// (internal/mcpfront). It is a binary of its own, not a mode of cx-hook:
// what it links (JSON, the log) would cost every hook's start.
package main

import (
	"os"
	"path/filepath"

	"cx/internal/buildinfo"
	"cx/internal/hookwire"
	"cx/internal/mcpfront"
)

// version is cx's, set at link time as cx's is (.goreleaser.yaml): the
// front answers the handshake in cx's name.
var version = ""

func main() {
	cx := "cx"
	if exe, err := os.Executable(); err == nil {
		cx = filepath.Join(filepath.Dir(exe), "cx")
	}
	o := mcpfront.Options{CX: cx, Version: buildinfo.Version(version), Home: hookwire.Home(os.Getenv), Environ: os.Environ()}
	if err := mcpfront.Run(o, os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString("cx-mcp: " + err.Error() + "\n")
		os.Exit(1)
	}
}
