package codex

import (
	"fmt"
	"testing"
)

// The frames are shaped as Codex 0.171's app-server wrote them to a daemon
// (ids, paths and texts made up); a daemon's requests as one sends them.
func TestAppServerFrames(t *testing.T) {
	const delta = `{"method":"item/agentMessage/delta","params":{"threadId":"T1","turnId":"U1","itemId":"msg_1","delta":" words"},"emittedAtMs":1}`
	f := NewAppServerFrames()
	for i, c := range []struct {
		fromServer bool
		line       string
		want       string // the event, "" for none, "error" for an error
	}{
		{false, `{"id":2,"method":"thread/start","params":{"cwd":"/p"}}`, ""},
		{true, delta, ""},
		{true, `{"id":2,"result":{"thread":{"id":"T1","path":"/r/T1.jsonl","cwd":"/p"}}}`, "started T1 /r/T1.jsonl"},
		{true, `{"id":2,"result":{"thread":{"id":"T1"}}}`, ""}, // answered already
		{true, `{"method":"item/agentMessage/delta","params":{"threadId":"T1","delta":"then \"turn/completed\" arrives"}}`, ""},
		{true, `{"method":"turn/completed","params":{"threadId":"T1","turn":{"id":"U1","status":"completed"}},"emittedAtMs":2}`, "turn T1"},
		{true, `{"method":"thread/status/changed","params":{"threadId":"T1","status":{"type":"idle"}}}`, ""},
		{true, `{"method":"thread/status/changed","params":{"threadId":"T1","status":{"type":"notLoaded"}}}`, "ended T1"},
		{true, `{"method":"thread/closed","params":{"threadId":"T2"},"emittedAtMs":3}`, "ended T2"},
		{true, `{"method":"thread/started","params":{"thread":{"id":"T3","path":"/r/T3.jsonl"}}}`, "started T3 /r/T3.jsonl"},
		// A daemon's JSON may escape '/': its request is still one.
		{false, `{"id":3,"method":"thread\/resume","params":{"threadId":"T1"}}`, ""},
		{true, delta, ""},
		{true, `{"id":3,"result":{"thread":{"id":"T1","path":"/r/T1.jsonl"}}}`, "resumed T1 /r/T1.jsonl"},
		{false, `{"id":4,"method":"thread/fork","params":{"threadId":"T1"}}`, ""},
		{true, `{"id":4,"result":{"thread":{"id":"T4"}}}`, "started T4 "},
		{true, `{"id":9,"result":{"thread":{"id":"T9"}}}`, ""}, // no such request
		{false, `{"id":5,"method":"turn/start","params":{"threadId":"T1"}}`, ""},
		{true, `{"id":5,"result":{"turn":{"id":"U2"}}}`, ""},
		// Not JSON: an error when it may be a frame that matters.
		{true, `{"method":"turn/completed","params":`, "error"},
		{true, `not json`, ""},
		// A method Read does not read, in a request from Codex.
		{true, `{"id":7,"method":"item/commandExecution/requestApproval","params":{"threadId":"T1"}}`, ""},
		// Frames from the daemon that are no thread request.
		{false, `{"method":"initialized"}`, ""},
		{false, `{"id":6,"result":{}}`, ""},
	} {
		ev, err := f.Read(c.fromServer, []byte(c.line))
		got := ""
		switch {
		case err != nil:
			got = "error"
		case ev.Kind != AppNothing:
			got = [...]string{AppThreadStarted: "started", AppThreadResumed: "resumed", AppTurnCompleted: "turn", AppThreadEnded: "ended"}[ev.Kind] + " " + ev.Thread.ID
			if ev.Kind == AppThreadStarted || ev.Kind == AppThreadResumed {
				got += " " + ev.Thread.Path
			}
		}
		if got != c.want {
			t.Errorf("frame %d %s: %q, want %q", i, c.line, got, c.want)
		}
	}
}

// BenchmarkAppServerFrames is the tap's work on a frame of a streamed
// answer (most of a turn's frames), beside decoding it whole, which every
// frame cost before frames were looked at first.
func BenchmarkAppServerFrames(b *testing.B) {
	line := []byte(`{"method":"item/agentMessage/delta","params":{"threadId":"019a2b3c-4d5e-7f80-9a1b-2c3d4e5f6a7b","turnId":"019a2b3c-4d5e-7f80-9a1b-2c3d4e5f6a7c","itemId":"msg_1","delta":" the"},"emittedAtMs":1795902154850}`)
	for _, c := range []struct {
		name string
		read func(f *AppServerFrames) (AppEvent, error)
	}{
		{"delta", func(f *AppServerFrames) (AppEvent, error) { return f.Read(true, line) }},
		{"delta decoded (BASE)", func(f *AppServerFrames) (AppEvent, error) { return f.decode(true, line) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := NewAppServerFrames()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if ev, err := c.read(f); err != nil || ev.Kind != AppNothing {
					b.Fatal(fmt.Sprint(ev, err))
				}
			}
		})
	}
}
