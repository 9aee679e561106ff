// Package logs is cx's one way of writing its own diagnostics: cx.log
// lines (redacted, never failing the caller), bounded files rotated aside,
// and the recover that turns a panic in a goroutine of cx's into a logged
// stack.
package logs

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"cx/internal/redact"
)

// Logger appends cx's own diagnostics to CX_HOME/logs/cx.log.
type Logger struct {
	path string
	mu   sync.Mutex
}

// New logs into home/logs/cx.log.
func New(home string) *Logger { return &Logger{path: filepath.Join(home, "logs", "cx.log")} }

// Printf writes one line; failures to log are ignored (logging must never
// break a hook or a run).
func (l *Logger) Printf(format string, args ...any) {
	if l == nil || l.path == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Errors can quote what they failed on (a payload, a command line):
	// nothing reaches the log unredacted.
	line := fmt.Sprintf("%s pid=%d %s\n", time.Now().UTC().Format(time.RFC3339Nano), os.Getpid(), redact.String(fmt.Sprintf(format, args...)))
	_ = Append(l.path, []byte(line))
}

// Recover, deferred first thing in a goroutine of cx's, turns a panic there
// into a line with its stack in cx.log: a bug in bookkeeping must not take
// down the supervisor (and with it Codex and the user's terminal), and the
// rollout keeps whatever the bookkeeping missed.
func (l *Logger) Recover(what string) {
	if r := recover(); r != nil {
		l.Printf("%s: panic: %v\n%s", what, r, debug.Stack())
	}
}

// Path is the log file.
func (l *Logger) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// maxBytes bounds each log: past it the file becomes <name>.1 (the previous
// .1 goes), so logs written on every hook never grow without end.
const maxBytes = 8 << 20

// Append adds data to the log file at path (creating it and its directory,
// private to the user), rotating it aside first when it has grown past the
// bound.
func Append(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxBytes {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(data)
	return err
}
