package codex

import (
	"encoding/json"
	"strings"
)

// Hook trust (Codex ≥ 0.169): Codex keys each hooks.json handler as
// "<hooks.json path>:<event_snake>:<group>:<handler>" and records the hash
// the user trusted under [hooks.state."<key>"] trusted_hash in the user
// config.toml (written through the app-server's config/batchWrite, read
// back by hooks/list).

// TrustTables are the config.toml tables that hold hook trust.
var TrustTables = []string{"hooks.state", "hooks"}

// TrustStateHeader is the config.toml header of one key's trust table.
func TrustStateHeader(key string) string {
	q, _ := json.Marshal(key) // TOML basic strings quote like JSON for these keys
	return "[hooks.state." + string(q) + "]"
}

// trustKeyPrefix is how the trust keys of an event's handlers in a hooks.json
// begin, e.g. "/home/u/.codex/hooks.json:session_start:".
func trustKeyPrefix(hooksPath, event string) string {
	var b strings.Builder
	for i, r := range event {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return hooksPath + ":" + b.String() + ":"
}

// TrustRecorded reports whether config.toml's text records trust for any
// handler of the event in that hooks.json (a text check, no parse: the
// fallback asks it on every start; `cx ctl doctor` asks Codex).
func TrustRecorded(configText, hooksPath, event string) bool {
	return strings.Contains(configText, trustKeyPrefix(hooksPath, event))
}

// EventName maps hooks/list's camelCase event names to hooks.json's.
func EventName(camel string) string {
	if camel == "" {
		return ""
	}
	return strings.ToUpper(camel[:1]) + camel[1:]
}
