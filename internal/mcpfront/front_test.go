package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cx/internal/mcpproto"
	"cx/mcpserver"
)

// What needs no archive is answered as the server answers it, byte for
// byte; a tool's call the front cannot hand over (no cx there; too large
// for a handoff) is answered with an error, and the stream goes on.
func TestFrontAnswers(t *testing.T) {
	home := t.TempDir()
	handshake := []string{
		`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`[1,2]`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}
	cases := []struct {
		name  string
		lines []string
		calls int // answered by the front with an error
	}{
		{"the handshake", handshake, 0},
		{"a call, cx not there", append(slices.Clone(handshake), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}`, `{"jsonrpc":"2.0","id":10,"method":"ping"}`), 1},
		{"a call too large", append(slices.Clone(handshake), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"query":"`+strings.Repeat("z", mcpproto.MaxPending)+`"}}}`), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Join(c.lines, "\n") + "\n"
			var got, want bytes.Buffer
			if err := Run(Options{CX: filepath.Join(t.TempDir(), "cx"), Version: "v1", Home: home}, strings.NewReader(in), &got); err != nil {
				t.Fatal(err)
			}
			if err := mcpserver.Serve(context.Background(), mcpserver.Options{Home: home, Version: "v1"}, strings.NewReader(in), &want); err != nil {
				t.Fatal(err)
			}
			gl, wl := strings.Split(strings.TrimSpace(got.String()), "\n"), strings.Split(strings.TrimSpace(want.String()), "\n")
			if len(gl) != len(wl) {
				t.Fatalf("the front answered %d lines, the server %d:\n%s\n---\n%s", len(gl), len(wl), got.String(), want.String())
			}
			errs := 0
			for i := range gl {
				if gl[i] == wl[i] {
					continue
				}
				var m struct {
					Error *mcpproto.Error `json:"error"`
				}
				if json.Unmarshal([]byte(gl[i]), &m) != nil || m.Error == nil || m.Error.Code != mcpproto.CodeInternal || !strings.HasPrefix(m.Error.Message, "tools/call: ") {
					t.Fatalf("line %d: the front answered\n%s\nthe server\n%s", i, gl[i], wl[i])
				}
				errs++
			}
			if errs != c.calls {
				t.Fatalf("%d calls answered with the front's error, want %d", errs, c.calls)
			}
		})
	}
}
