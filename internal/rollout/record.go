package rollout

import (
	"encoding/json"
	"unicode/utf8"
)

// Placeholder kinds: a line that could not be used is kept as a counted
// placeholder, never dropped silently and never an error.
const (
	placeholderTooLong     = "too_long"
	placeholderInvalidUTF8 = "invalid_utf8"
	placeholderInvalidJSON = "invalid_json"
)

// Record is one rollout line: {"timestamp", "ordinal"?, "type", "payload", "metadata"?}.
type Record struct {
	Offset      int64
	Size        int64
	Timestamp   string
	Type        string          // session_meta, turn_context, event_msg, response_item, compacted, …
	Ordinal     int64           // the record's ordinal (0.169+), -1 when the line has none
	PType       string          // payload.type, when the payload is an object with one
	Payload     json.RawMessage // valid only during the callback
	Placeholder string          // non-empty: the line could not be parsed (kind)
}

type envelope struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Ordinal   *int64          `json:"ordinal"`
	Payload   json.RawMessage `json:"payload"`
}

// parseLine turns a line into a record; an unusable line becomes a placeholder.
func parseLine(l Line) Record {
	r := Record{Offset: l.Offset, Size: l.Size, Ordinal: -1}
	switch {
	case l.TooLong:
		r.Placeholder = placeholderTooLong
		return r
	case !utf8.Valid(l.Data):
		r.Placeholder = placeholderInvalidUTF8
		return r
	}
	if ts, typ, ordinal, payload, ok := scanEnvelope(l.Data); ok {
		r.Timestamp, r.Type, r.Ordinal, r.Payload = ts, typ, ordinal, payload
		if typ == "event_msg" || typ == "response_item" {
			r.PType = payloadType(payload)
		}
		return r
	}
	var env envelope
	if err := json.Unmarshal(l.Data, &env); err != nil || env.Type == "" {
		r.Placeholder = placeholderInvalidJSON
		return r
	}
	r.Timestamp, r.Type, r.Payload = env.Timestamp, env.Type, env.Payload
	if env.Ordinal != nil {
		r.Ordinal = *env.Ordinal
	}
	r.PType = payloadType(env.Payload)
	return r
}

// payloadType finds the payload's top-level "type" without decoding the
// whole payload (payloads can be large: instructions, tool output).
func payloadType(p json.RawMessage) string {
	// Fast path: Codex writes "type" first in every payload that has one.
	const prefix = `{"type":"`
	if len(p) > len(prefix) && string(p[:len(prefix)]) == prefix {
		rest := p[len(prefix):]
		for i, c := range rest {
			if c == '"' {
				return string(rest[:i])
			}
			if c == '\\' {
				break
			}
		}
	}
	// Otherwise walk the object's keys without decoding their values.
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '{' {
		return ""
	}
	i++
	for {
		i = skipSpace(p, i)
		if i < len(p) && p[i] == ',' {
			i = skipSpace(p, i+1)
		}
		key, next, ok := scanString(p, i)
		if !ok {
			return ""
		}
		i = skipSpace(p, next)
		if i >= len(p) || p[i] != ':' {
			return ""
		}
		i = skipSpace(p, i+1)
		if key == "type" {
			t, _, _ := scanString(p, i)
			return t
		}
		if i, ok = skipValue(p, i); !ok {
			return ""
		}
	}
}
