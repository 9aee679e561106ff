package mcpproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"strings"
)

// Message is a request or notification as a server reads it (its params
// kept raw).
type Message struct {
	Request
	Params json.RawMessage `json:"params,omitempty"`
}

// Parse reads one line as a JSON-RPC request or notification; anything
// else (not JSON, a batch, a response, no method) is dropped, said to logf.
func Parse(line []byte, logf func(string, ...any)) (Message, bool) {
	var m Message
	t := strings.TrimSpace(string(line))
	if t == "" {
		return m, false
	}
	err := json.Unmarshal([]byte(t), &m)
	if err == nil && (m.JSONRPC != JSONRPC || m.Method == "") {
		err = errors.New("not a JSON-RPC request or notification")
	}
	if err != nil {
		if logf != nil {
			logf("mcp: dropped a line (%d bytes): %v", len(line), err)
		}
		return m, false
	}
	return m, true
}

// MaxLine bounds one incoming message; a longer line is dropped.
const MaxLine = 4 << 20

// ReadLine reads one line; past MaxLine it discards the rest and returns
// nothing for it.
func ReadLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, err
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// Write writes r as one line and flushes it.
func Write(w *bufio.Writer, r Response) error {
	if r.Error == nil && r.Result == nil {
		r.Result = map[string]any{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}

// Answered answers a message that needs no archive on w (a notification
// is not answered; notifications/initialized marks the stream
// initialized). It reports false, writing nothing, for CallMethod.
func Answered(w *bufio.Writer, m Message, initialized *bool, version string) (bool, error) {
	if len(m.ID) == 0 {
		if m.Method == "notifications/initialized" {
			*initialized = true
		}
		return true, nil
	}
	if m.Method == CallMethod {
		return false, nil
	}
	res, rerr := Answer(m, initialized, version)
	return true, Write(w, Response{JSONRPC: JSONRPC, ID: m.ID, Result: res, Error: rerr})
}
