// Package mcpfront is cx's MCP server as Codex starts it (`cx-mcp`, as cx
// ctl install registers it). Codex starts one for every session and lists
// its tools; most sessions never call one. So the handshake — and ping,
// the tool list, a method the server does not have — is answered here, in
// a small binary, without cx's start (cx links SQLite,
// recall and the sinks: its start is most of what a server that is never
// called costs). The first tool call hands the stream over: the front
// execs `cx ctl mcp` beside it in its own place — the same process and
// pipes, so Codex sees one server throughout — with what it read and did
// not answer in the environment (mcpproto.HandoffEnv). Every answer it
// gives is mcpproto's, the server's own.
package mcpfront

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"cx/internal/hookwire"
	"cx/internal/logs"
	"cx/internal/mcpproto"
)

// Options are the front's.
type Options struct {
	CX      string // the cx exec'd for a tool's call
	Version string // cx's, for serverInfo
	// Home is CX_HOME: its cx.log is told of each dropped line and, as the
	// front leaves, of what it cost (Codex's share beside cx's counts it),
	// as the server's are — while it is there (a line would make it).
	Home    string
	Environ []string // the environment cx is given
}

// Run answers the stream until its input ends, or hands it over to cx
// (then it does not return); a tool call cx cannot take (it cannot be
// started, or the call is larger than a handoff carries) is answered with
// an error, and the stream goes on.
func Run(o Options, r io.Reader, w io.Writer) error {
	logf := func(format string, args ...any) {
		if _, err := os.Stat(o.Home); err == nil {
			logs.New(o.Home).Printf(format, args...)
		}
	}
	// Once: Codex may close the input and signal the server at once.
	leave := sync.OnceFunc(func() {
		cpu := time.Duration(hookwire.SelfCPU()) * time.Microsecond
		logf("mcp: leaving; cpu cx=%s", cpu.Round(time.Millisecond))
	})
	sigs, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer func() { signal.Stop(sigs); close(done) }()
	go func() { // a signal ends the server at once, as cx's does
		select {
		case <-sigs:
			leave()
			os.Exit(0)
		case <-done:
		}
	}()
	br := bufio.NewReaderSize(r, 16<<10)
	out := bufio.NewWriter(w)
	initialized := false
	for {
		line, err := mcpproto.ReadLine(br)
		if m, ok := mcpproto.Parse(line, logf); ok {
			answered, werr := mcpproto.Answered(out, m, &initialized, o.Version)
			if !answered {
				// Unread input stays in the pipe for cx; what the buffer holds
				// goes with the call.
				pending := append(line, peek(br)...)
				why := fmt.Sprintf("a request of %d bytes is more than cx's MCP server takes", len(pending))
				if len(pending) <= mcpproto.MaxPending {
					signal.Reset()
					why = handOver(o, mcpproto.Handoff{Initialized: initialized, Pending: pending}).Error()
					signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
				}
				werr = mcpproto.Write(out, mcpproto.Response{JSONRPC: mcpproto.JSONRPC, ID: m.ID, Error: &mcpproto.Error{Code: mcpproto.CodeInternal, Message: "tools/call: " + why}})
			}
			if werr != nil {
				leave()
				return fmt.Errorf("mcp: %w", werr)
			}
		}
		if err != nil {
			leave()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("mcp: %w", err)
		}
	}
}

// peek is what br holds unread.
func peek(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return b
}

// handOver execs `cx ctl mcp` in this process's place with h in its
// environment; it returns only when it could not.
func handOver(o Options, h mcpproto.Handoff) error {
	env := slices.DeleteFunc(slices.Clone(o.Environ), func(kv string) bool { return strings.HasPrefix(kv, mcpproto.HandoffEnv+"=") })
	env = append(env, mcpproto.HandoffEnv+"="+h.Encode())
	err := syscall.Exec(o.CX, []string{o.CX, "ctl", "mcp"}, env)
	return fmt.Errorf("cx could not take it: %v", err)
}
