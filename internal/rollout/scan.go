package rollout

import (
	"bytes"
	"strconv"
)

// scanEnvelope reads a rollout line's top level — {"timestamp", "ordinal"?,
// "type", "payload", "metadata"?} — without decoding or validating the
// payload: most payloads (instructions, token counts, tool schemas) are
// never needed, and full JSON validation of every byte was most of the
// reader's cost. It reports ok=false for anything it does not understand;
// the caller then falls back to encoding/json, which decides.
func scanEnvelope(b []byte) (ts, typ string, ordinal int64, payload []byte, ok bool) {
	ordinal = -1
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", "", -1, nil, false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return "", "", -1, nil, false
		}
		if b[i] == '}' {
			i = skipSpace(b, i+1)
			return ts, typ, ordinal, payload, i == len(b) && typ != ""
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		key, next, ok := scanString(b, i)
		if !ok {
			return "", "", -1, nil, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return "", "", -1, nil, false
		}
		i = skipSpace(b, i+1)
		end, ok := skipValue(b, i)
		if !ok {
			return "", "", -1, nil, false
		}
		switch key {
		case "timestamp":
			ts, _, ok = scanString(b, i)
		case "type":
			typ, _, ok = scanString(b, i)
		case "payload":
			payload = b[i:end]
		case "ordinal": // 0.169+: the record's place in the thread's history
			if n, err := strconv.ParseInt(string(b[i:end]), 10, 64); err == nil {
				ordinal = n
			}
		}
		if !ok {
			return "", "", -1, nil, false
		}
		i = end
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// scanString reads the JSON string starting at b[i] (a quote).
func scanString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	end, ok := stringEnd(b, i+1)
	if !ok {
		return "", i, false
	}
	raw := b[i+1 : end]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), end + 1, true
	}
	s, err := strconv.Unquote(string(b[i : end+1]))
	if err != nil {
		return "", i, false
	}
	return s, end + 1, true
}

// stringEnd finds the closing quote of a string whose body starts at i.
func stringEnd(b []byte, i int) (int, bool) {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false
		}
		q := i + j
		// An odd number of backslashes before it escapes it.
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q, true
		}
		i = q + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, ok := stringEnd(b, i+1)
		return end + 1, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := stringEnd(b, i+1)
				if !ok {
					return 0, false
				}
				i = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		return j, j > i
	}
}

// peek reports whether the payload's first bytes contain s: a cheap test
// of fields Codex writes early (a message's role, an item's type) before
// paying for a full decode.
func peek(p []byte, s string, within int) bool {
	if len(p) > within {
		p = p[:within]
	}
	return bytes.Contains(p, []byte(s))
}

// fields finds the raw values of the given top-level keys of a JSON object
// (nil where absent), without decoding anything else.
func fields(p []byte, keys ...string) [][]byte {
	out := make([][]byte, len(keys))
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '{' {
		return out
	}
	i++
	found := 0
	for found < len(keys) {
		i = skipSpace(p, i)
		if i < len(p) && p[i] == ',' {
			i = skipSpace(p, i+1)
		}
		key, next, ok := scanString(p, i)
		if !ok {
			return out
		}
		i = skipSpace(p, next)
		if i >= len(p) || p[i] != ':' {
			return out
		}
		i = skipSpace(p, i+1)
		end, ok := skipValue(p, i)
		if !ok {
			return out
		}
		for k, want := range keys {
			if key == want && out[k] == nil {
				out[k] = p[i:end]
				found++
			}
		}
		i = end
	}
	return out
}

// str decodes a raw JSON string value ("" for anything else).
func str(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	s, _, ok := scanString(raw, 0)
	if !ok {
		return ""
	}
	return s
}
