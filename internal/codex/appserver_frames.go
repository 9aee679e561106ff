package codex

import "encoding/json"

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

// Read returns what one frame means; an error says it is not JSON.
func (f *AppServerFrames) Read(fromServer bool, line []byte) (AppEvent, error) {
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
