package rollout

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CaptureFile reads a rollout from cur and assembles its turns.
// meta is the file's identity when already known (it is needed to keep
// paths relative and to skip a fork's copied history on later reads).
func CaptureFile(path string, cur Cursor, meta *SessionMeta, opts Options) (Capture, error) {
	opts = opts.withDefaults()
	a := newAssembler(opts, meta)
	a.seen = max(cur.Seen, cur.Offset)
	var sections []string
	res, err := readLines(path, cur, opts.MaxLineBytes, func(l Line) error {
		a.add(parseLine(l), l.Offset+l.Size+1)
		sections = append(sections, SectionsIn(l.Data)...)
		return nil
	})
	if err != nil {
		return Capture{Cursor: cur}, err
	}
	if res.Rewritten {
		// Read again from the start with a fresh assembler: the file changed
		// under the cursor. Callers dedupe turns by key.
		a = newAssembler(opts, nil)
		sections = nil
		res, err = readLines(path, Cursor{}, opts.MaxLineBytes, func(l Line) error {
			a.add(parseLine(l), l.Offset+l.Size+1)
			sections = append(sections, SectionsIn(l.Data)...)
			return nil
		})
		if err != nil {
			return Capture{Cursor: cur}, err
		}
		res.Rewritten = true
	}
	c := a.finish()
	c.Rewritten, c.Bytes, c.Sections = res.Rewritten, res.Bytes, sections
	c.Cursor = res.Cursor
	c.Cursor.Seen = res.Cursor.Offset
	if at := a.resumeAt(); at >= 0 && at < res.Cursor.Offset {
		// Resume at the unfinished task's start; what lies before Seen is
		// not counted again.
		c.Cursor.Offset = at
	}
	return c, nil
}

// StreamFile reads a whole rollout and hands each of its turns to emit in
// order, the last one (perhaps still open) at the end; it keeps no turn
// once handed on, so its memory does not grow with the rollout. The
// capture it returns has everything but the turns.
func StreamFile(path string, opts Options, emit func(Turn)) (Capture, error) {
	opts = opts.withDefaults()
	a := newAssembler(opts, nil)
	a.emit = emit
	res, err := readLines(path, Cursor{}, opts.MaxLineBytes, func(l Line) error {
		a.add(parseLine(l), l.Offset+l.Size+1)
		return nil
	})
	if err != nil {
		return Capture{}, err
	}
	c := a.finish()
	c.Bytes, c.Cursor = res.Bytes, res.Cursor
	return c, nil
}

// Assemble reduces complete rollout bytes (no cursor) to their capture.
func Assemble(data []byte, opts Options) Capture {
	opts = opts.withDefaults()
	a := newAssembler(opts, nil)
	off := int64(0)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // an incomplete last line is not read
		}
		l := Line{Offset: off, Size: int64(i), Data: data[:i]}
		if i > opts.MaxLineBytes {
			l.Data, l.TooLong = nil, true
		}
		a.add(parseLine(l), off+int64(i)+1)
		data = data[i+1:]
		off += int64(i) + 1
	}
	return a.finish()
}

type assembler struct {
	opts      Options
	meta      *SessionMeta
	metas     int
	forkCopy  bool  // inside a fork's copied parent history (0.128)
	forkAt    int64 // where that copy's session_meta starts
	forkTime  time.Time
	turns     []Turn
	emit      func(Turn) // streaming: each turn once final, none kept (nil: keep them all)
	cur       *Turn      // the open turn
	curTask   string     // the key of the task cur belongs to
	taskTurns int        // the turns the current task has begun (a message sent while it ran begins one)
	taskID    string
	taskStart int64 // offset of the task_started that opened the current task
	taskAt    string
	// goalTask: the current task was started by Codex's goal, not by a
	// message: its turn begins with its first item.
	goalTask bool
	pending  string // a plain user message seen in the task, used if no prompt event comes
	calls    map[string]int
	seen     int64 // records before this offset were counted by an earlier read
	capture  Capture
}

func newAssembler(opts Options, meta *SessionMeta) *assembler {
	a := &assembler{opts: opts, meta: meta, calls: map[string]int{}, taskStart: -1}
	if meta != nil {
		a.metas = 1
		a.forkTime = parseTime(meta.Timestamp)
	}
	return a
}

func (a *assembler) finish() Capture {
	if a.cur == nil && a.pending != "" && a.taskStart >= 0 {
		// The task's prompt event has not come: not yet, or never — Codex
		// died between the user's message and its event. The message
		// begins the turn, open; the next read reads the task again.
		a.prompt(a.pending, Record{Offset: a.taskStart, Timestamp: a.taskAt})
	}
	a.flush()
	a.capture.Meta = a.meta
	a.capture.Turns = a.turns
	return a.capture
}

// resumeAt is where the next read must start so that an unfinished task is
// read whole again (and a fork's copied history known as one): its start,
// or -1 when every task is finished.
func (a *assembler) resumeAt() int64 {
	at := a.taskStart
	if at < 0 && a.cur != nil && !a.cur.Complete {
		at = a.cur.Offset
	}
	if a.forkCopy && (at < 0 || a.forkAt < at) {
		// Inside a fork's copied history the next read must know it is:
		// it starts again at the copy's session_meta.
		at = a.forkAt
	}
	return at
}

var sectionsRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<cx-context source=\\?"[^"\\]*\\?" sections=\\?"([^"\\]*)\\?"`)
})

func (a *assembler) add(r Record, end int64) {
	fresh := r.Offset >= a.seen // not counted by an earlier read
	if fresh {
		a.capture.Records++
	}
	if r.Placeholder != "" {
		if fresh {
			a.capture.Placeholders = append(a.capture.Placeholders, Placeholder{Kind: r.Placeholder, Offset: r.Offset, Size: r.Size})
		}
		return
	}
	if a.meta != nil && a.meta.HistoryStart > 0 && r.Ordinal >= 0 && r.Ordinal < a.meta.HistoryStart && r.Type != "session_meta" {
		return // a forked subagent's copy of its parent's history, as its session_meta bounds it
	}
	switch r.Type {
	case "session_meta":
		a.sessionMeta(r)
		return
	case "compacted":
		if !a.forkCopy && fresh {
			a.capture.Compactions++
		}
		return
	}
	if r.Type == "event_msg" && r.PType == "turn_aborted" && fresh && !a.forkCopy {
		a.capture.Aborted++
	}
	if a.forkCopy {
		// A fork's copy of its parent's history ends where the fork's own
		// first task starts: a task newer than the fork itself.
		if r.Type == "event_msg" && r.PType == "task_started" {
			id, startedAt := taskIdentity(r.Payload)
			if !a.copied(id, startedAt) {
				a.forkCopy = false
			}
		}
		if a.forkCopy {
			return
		}
	}
	switch r.Type {
	case "event_msg":
		a.event(r)
	case "response_item":
		a.item(r)
	}
}

func (a *assembler) sessionMeta(r Record) {
	var m struct {
		SessionMeta
		Source json.RawMessage `json:"source"`
	}
	_ = json.Unmarshal(r.Payload, &m)
	a.metas++
	if a.meta == nil {
		mm := m.SessionMeta
		if len(m.Source) > 0 && m.Source[0] == '"' {
			_ = json.Unmarshal(m.Source, &mm.Source)
		}
		var src struct {
			Subagent struct {
				ThreadSpawn struct {
					ParentID string `json:"parent_thread_id"`
					Nickname string `json:"agent_nickname"`
					Role     string `json:"agent_role"`
				} `json:"thread_spawn"`
			} `json:"subagent"`
		}
		if len(m.Source) > 0 && m.Source[0] == '{' && json.Unmarshal(m.Source, &src) == nil {
			ts := src.Subagent.ThreadSpawn
			mm.Source = "subagent"
			mm.ParentID = cmp.Or(mm.ParentID, ts.ParentID)
			mm.Agent, mm.AgentRole = cmp.Or(mm.Agent, ts.Nickname), cmp.Or(mm.AgentRole, ts.Role)
		}
		a.meta = &mm
		a.forkTime = parseTime(mm.Timestamp)
		return
	}
	if m.ID != "" && m.ID != a.meta.ID && a.meta.HistoryStart == 0 {
		// A second session_meta naming another session: the parent's history
		// copied into a fork (0.128) follows. (A subagent whose meta says
		// where its own history starts is bounded by that instead.)
		a.forkCopy, a.forkAt = true, r.Offset
	}
}

// copied reports whether a task predates the fork (belongs to the parent).
func (a *assembler) copied(turnID string, startedAt int64) bool {
	if a.forkTime.IsZero() {
		return false
	}
	if t, ok := uuidV7Time(turnID); ok {
		return t.Before(a.forkTime)
	}
	return startedAt > 0 && startedAt < a.forkTime.Unix()
}

func taskIdentity(p json.RawMessage) (string, int64) {
	f := fields(p, "turn_id", "started_at", "turn_attribution")
	id := str(f[0])
	if id == "" && f[2] != nil {
		id = str(fields(f[2], "turn_id")[0])
	}
	started, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return id, started
}

// Why a turn no user message began ran (Turn.Trigger).
const (
	// TriggerGoal: Codex's goal started it (turn_trigger "goal").
	TriggerGoal = "goal"
	// TriggerAgent: another agent's message began it (a subagent's task
	// with multi_agent_v2).
	TriggerAgent = "agent"
)

// taskTrigger is why a task started (turn_attribution.turn_trigger, 0.171:
// "exec", "user", "goal", …).
func taskTrigger(p json.RawMessage) string {
	ta := fields(p, "turn_attribution")[0]
	if ta == nil {
		return ""
	}
	return str(fields(ta, "turn_trigger")[0])
}

// triggered begins the turn of a task no message started (a goal's
// continuation) at its first item, once: an empty goal task that was
// interrupted before doing anything leaves no turn.
func (a *assembler) triggered() {
	if a.cur != nil || !a.goalTask || a.taskStart < 0 {
		return
	}
	a.prompt("", Record{Offset: a.taskStart, Timestamp: a.taskAt})
	if a.cur != nil {
		a.cur.Trigger = TriggerGoal
	}
}

func (a *assembler) event(r Record) {
	switch r.PType {
	case "task_started":
		a.closeTask()
		a.taskID, _ = taskIdentity(r.Payload)
		a.taskStart, a.taskAt, a.pending = r.Offset, r.Timestamp, ""
		a.goalTask = taskTrigger(r.Payload) == TriggerGoal
	case "user_message": // 0.128 and earlier
		a.prompt(str(fields(r.Payload, "message")[0]), r)
	case "item_completed": // 0.169: typed items
		if !peek(r.Payload, `"type":"UserMessage"`, 300) && !peek(r.Payload, `"type":"CommandExecution"`, 300) && !peek(r.Payload, `"type":"FileChange"`, 300) {
			return // agent messages, reasoning: the response items carry them
		}
		var m struct {
			Item struct {
				Type    string `json:"type"`
				ID      string `json:"id"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				ExitCode *int                       `json:"exit_code"`
				Changes  map[string]json.RawMessage `json:"changes"`
				Status   string                     `json:"status"`
			} `json:"item"`
		}
		if json.Unmarshal(r.Payload, &m) != nil {
			return
		}
		switch m.Item.Type {
		case "UserMessage":
			var b strings.Builder
			for _, c := range m.Item.Content {
				b.WriteString(c.Text)
			}
			a.prompt(b.String(), r)
		case "CommandExecution":
			if t := a.cur; t != nil && m.Item.ExitCode != nil {
				if i, ok := a.calls[m.Item.ID]; ok {
					t.Tools[i].ExitCode = m.Item.ExitCode
				}
			}
		case "FileChange":
			a.fileChanges(m.Item.Changes, m.Item.Status == "completed")
		}
	case "exec_command_end": // 0.128
		f := fields(r.Payload, "call_id", "exit_code")
		if code, err := strconv.Atoi(string(f[1])); err == nil && a.cur != nil {
			if i, ok := a.calls[str(f[0])]; ok {
				a.cur.Tools[i].ExitCode = &code
			}
		}
	case "patch_apply_end":
		var m struct {
			Success bool                       `json:"success"`
			Changes map[string]json.RawMessage `json:"changes"`
		}
		if json.Unmarshal(r.Payload, &m) == nil {
			a.fileChanges(m.Changes, m.Success)
		}
	case "thread_goal_updated":
		// The goal as it now stands, whoever changed it: the user (/goal,
		// a pause with Esc, /goal resume) or the model (0.171).
		var m struct {
			Goal *Goal `json:"goal"`
		}
		if json.Unmarshal(r.Payload, &m) == nil && m.Goal != nil {
			a.goalAt(*m.Goal, r.Offset)
		}
	case "turn_aborted":
		if a.cur != nil {
			a.cur.Aborted, a.cur.Complete = true, true
		}
		a.closeTask()
	case "task_complete":
		if a.cur != nil {
			a.cur.Complete = true
		}
		a.closeTask()
	}
}

// prompt gives the current task its user text, starting its turn.
func (a *assembler) prompt(text string, r Record) {
	text = StripInjected(text)
	a.pending = ""
	task := a.taskKey(r)
	key, start, at := task, a.taskStart, a.taskAt
	if a.cur != nil && a.curTask == task {
		switch {
		case a.cur.User == "":
			a.cur.User = text
			return
		case text == a.cur.User && len(a.cur.Assistant) == 0 && len(a.cur.Tools) == 0:
			return // the same message recorded twice
		}
		// A message sent while the task ran (steered into it, or queued and
		// taken by it) is a turn of its own: each message is stored once, as
		// itself, and a turn already sent to a sink never grows. The one
		// before it is over.
		a.cur.Complete = true
		a.taskTurns++
		key, start, at = fmt.Sprintf("%s/%d", task, a.taskTurns), r.Offset, r.Timestamp
	} else {
		a.taskTurns = 1
	}
	a.cur = nil
	if start < 0 {
		start = r.Offset
	}
	t := Turn{Key: key, Offset: start, Time: at, User: text}
	if t.Time == "" {
		t.Time = r.Timestamp
	}
	a.flush()
	a.turns = append(a.turns, t)
	a.cur, a.curTask = &a.turns[len(a.turns)-1], task
	a.calls = map[string]int{}
}

// flush hands the turns before a new one to emit, when streaming: only the
// open turn (a.cur) can still change, so none of them will.
func (a *assembler) flush() {
	if a.emit == nil {
		return
	}
	for _, t := range a.turns {
		a.emit(t)
	}
	clear(a.turns)
	a.turns = a.turns[:0]
}

func (a *assembler) taskKey(r Record) string {
	if a.taskID != "" {
		return a.taskID
	}
	if a.taskStart >= 0 {
		return fmt.Sprintf("offset:%d", a.taskStart)
	}
	return fmt.Sprintf("offset:%d", r.Offset)
}

// closeTask ends the current task (and its turn): no later record belongs to it.
func (a *assembler) closeTask() {
	if a.cur == nil && a.pending != "" && a.taskStart >= 0 {
		// A task whose prompt was only a plain user message (older formats).
		a.prompt(a.pending, Record{Offset: a.taskStart, Timestamp: a.taskAt})
	}
	a.cur = nil
	a.taskID, a.taskStart, a.taskAt, a.pending = "", -1, "", ""
	a.goalTask = false
}
