package codex

import (
	"bytes"
	"encoding/json"
)

// AppThread is a thread as app-server frames name it.
type AppThread struct {
	ID   string `json:"id"`
	Path string `json:"path"`
	Cwd  string `json:"cwd"`
}

// What a frame between a daemon and `codex app-server` means for the
// threads it serves.
const (
	AppNothing       = iota
	AppThreadStarted // a thread/start or thread/fork result, or thread/started
	AppThreadResumed // a thread/resume result
	AppTurnCompleted // turn/completed
	AppThreadEnded   // thread/closed, or a thread going notLoaded
)

// AppEvent is one frame's meaning: its kind and the thread it is about
// (Thread.ID alone for turns and ends).
type AppEvent struct {
	Kind   int
	Thread AppThread
}

// AppServerFrames reads the newline-delimited JSON-RPC between a daemon and
// `codex app-server`, one frame at a time in the order each side sent them:
// threads are named by the results of thread/start, thread/resume and
// thread/fork requests (matched by request id) and by thread/started
// notifications; app-server dispatches no Stop hook, so turn/completed
// stands for one. Not safe for concurrent use.
type AppServerFrames struct {
	pending map[string]string // request id → method, for the requests whose results name a thread
}

// NewAppServerFrames returns a reader with no request pending.
func NewAppServerFrames() *AppServerFrames {
	return &AppServerFrames{pending: map[string]string{}}
}

// Read returns what one frame means; an error says a frame that may mean
// something is not JSON. A frame that cannot is not read at all (below).
func (f *AppServerFrames) Read(fromServer bool, line []byte) (AppEvent, error) {
	if !f.mayMatter(fromServer, line) {
		return AppEvent{}, nil
	}
	return f.decode(fromServer, line)
}

// decode reads a frame whole.
func (f *AppServerFrames) decode(fromServer bool, line []byte) (AppEvent, error) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return AppEvent{}, err
	}
	if !fromServer {
		switch msg.Method {
		case "thread/start", "thread/resume", "thread/fork":
			if len(msg.ID) > 0 {
				f.pending[string(msg.ID)] = msg.Method
			}
		}
		return AppEvent{}, nil
	}
	if len(msg.ID) > 0 && msg.Method == "" {
		method, ok := f.pending[string(msg.ID)]
		delete(f.pending, string(msg.ID))
		var res struct {
			Thread AppThread `json:"thread"`
		}
		if !ok || json.Unmarshal(msg.Result, &res) != nil || res.Thread.ID == "" {
			return AppEvent{}, nil
		}
		if method == "thread/resume" {
			return AppEvent{AppThreadResumed, res.Thread}, nil
		}
		return AppEvent{AppThreadStarted, res.Thread}, nil
	}
	var p struct {
		ThreadID string    `json:"threadId"`
		Thread   AppThread `json:"thread"`
		Status   struct {
			Type string `json:"type"`
		} `json:"status"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	switch {
	case msg.Method == "thread/started" && p.Thread.ID != "":
		return AppEvent{AppThreadStarted, p.Thread}, nil
	case msg.Method == "turn/completed":
		return AppEvent{AppTurnCompleted, AppThread{ID: p.ThreadID}}, nil
	case msg.Method == "thread/closed", msg.Method == "thread/status/changed" && p.Status.Type == "notLoaded":
		if p.ThreadID != "" {
			return AppEvent{AppThreadEnded, AppThread{ID: p.ThreadID}}, nil
		}
	}
	return AppEvent{}, nil
}

// mayMatter reports whether a frame can mean anything to f: one that
// AppFrameMayMatter says may, except a response from Codex when no thread
// request of the daemon's is pending.
func (f *AppServerFrames) mayMatter(fromServer bool, line []byte) bool {
	may, response := appFrame(fromServer, line)
	if response {
		return len(f.pending) > 0 && bytes.Contains(line, []byte(`"result"`))
	}
	return may
}

// AppFrameMayMatter reports whether a frame may mean anything to an
// AppServerFrames, without decoding it and whatever is pending: most of a
// turn's frames are Codex's notifications of its progress (a delta for
// every few words the model streams, each command's output, token
// counts), and decoding one cost 6–10 µs of the wrapper's time — a long
// answer's thousands of deltas, for every thread of a daemon.
//
// A frame from the daemon may when it may be a thread request (any
// spelling of the method holds "thread"). One from Codex may when it has
// no method (a response, which may be a thread request's result) or its
// method is one Read reads: Codex writes its frames with serde_json, its
// method first and never with '/' escaped, and a string's text cannot hold
// `"method":"` (its quotes are escaped), so the first one is the frame's.
func AppFrameMayMatter(fromServer bool, line []byte) bool {
	may, _ := appFrame(fromServer, line)
	return may
}

// appFrame is AppFrameMayMatter, and whether the frame is a response from
// Codex (one with no method), its method looked for once.
func appFrame(fromServer bool, line []byte) (may, response bool) {
	if !fromServer {
		return bytes.Contains(line, []byte("thread")), false
	}
	method := frameMethod(line)
	if method == nil {
		return true, true
	}
	switch string(method) {
	case "thread/started", "turn/completed", "thread/closed", "thread/status/changed":
		return true, false
	}
	return false, false
}

// frameMethod is the method a frame from Codex names (above), nil for none.
func frameMethod(line []byte) []byte {
	const key = `"method":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil
	}
	method := line[i+len(key):]
	if j := bytes.IndexByte(method, '"'); j >= 0 {
		method = method[:j]
	}
	return method
}
