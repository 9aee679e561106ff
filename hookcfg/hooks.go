// Package hookcfg owns cx's installation in Codex's files: its entries in
// Codex's hooks.json (added after everything already there, edited as
// text so nothing else moves), their trust (recorded by asking Codex's own
// app-server, for cx's entries only), and the few lines of config.toml cx
// ever touches; the registration of cx's MCP server (through `codex mcp`,
// else a config.toml line edit); and doctor's checks of the installed hooks
// (installed, trusted, firing) and of the MCP server (registered, answering).
package hookcfg

import (
	"bytes"
	"cx/internal/codex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Entry is one hook cx installs.
type Entry struct {
	Event   string
	Timeout int // seconds: upper bounds; the handler answers in milliseconds
}

// Entries are cx's hooks, in the order they are written.
var Entries = []Entry{
	{codex.HookSessionStart, 30}, {codex.HookUserPromptSubmit, 10}, {codex.HookStop, 30}, {codex.HookPreCompact, 60},
	{codex.HookPostCompact, 30}, {codex.HookSessionEnd, 3}, {codex.HookInterrupt, 3},
}

// ClientName is the hook client's file name: cx's releases put it beside
// cx (cmd/cx-hook).
const ClientName = "cx-hook"

// Command is the hook command for event: the hook client beside cx when
// there is one (a process a third of cx's to start, which gives the event
// to the hook host), else cx's own handler; absolute paths, quoted. Codex
// runs it with the user's shell (codex.HookShell): exec has the shell
// become the hook rather than fork it and wait (a process fewer on every
// hook: 0.3-0.4 ms of CPU).
// The client runs the "cx" beside it when no host takes a hook, so a cx
// under another name gives its own handler.
func Command(cxPath, event string) string {
	if client, ok := beside(cxPath, ClientName); ok {
		return "exec " + shellQuote(client) + " " + event
	}
	return "exec " + shellQuote(cxPath) + " ctl hook " + event
}

// beside is the program name beside cx at cxPath (the hook client, the MCP
// front), when it is there and would run that cx (each runs the "cx"
// beside it).
func beside(cxPath, name string) (string, bool) {
	p := filepath.Join(filepath.Dir(cxPath), name)
	return p, filepath.Base(cxPath) == "cx" && isExecutable(p)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// isOurs reports whether a hook command is cx's handler for event: "<…/cx>
// ctl hook <event>" or "<…/cx-hook> <event>", after "exec " or not (as
// cx installed it before), whatever path cx had when it was installed —
// or the handler of the cx at cxPath, whatever its name ("" for none): a
// cx installed under another name knows its own hooks, and an install
// rewrites them rather than adding a second set beside them.
func isOurs(command, event, cxPath string) bool {
	c := strings.TrimSpace(command)
	if rest, ok := strings.CutPrefix(c, "exec "); ok {
		c = strings.TrimSpace(rest)
	}
	for _, form := range []struct{ suffix, base string }{{" ctl hook " + event, "cx"}, {" " + event, ClientName}} {
		if bin, ok := strings.CutSuffix(c, form.suffix); ok {
			path, ok := oneWord(strings.TrimSpace(bin))
			if ok && (filepath.Base(path) == form.base || form.base == "cx" && cxPath != "" && filepath.Clean(path) == filepath.Clean(cxPath)) {
				return true
			}
		}
	}
	return false
}

// oneWord is s as the shell reads one word: a path quoted as shellQuote
// quotes it, in double quotes, or bare; false for anything else (another
// command before it: "echo '/…/cx-hook'" is not cx's hook).
func oneWord(s string) (string, bool) {
	switch {
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		inner := strings.ReplaceAll(s[1:len(s)-1], `'\''`, "'")
		return inner, shellQuote(inner) == s
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		inner := s[1 : len(s)-1]
		return inner, !strings.ContainsAny(inner, `"\$`+"`")
	}
	return s, s != "" && !strings.ContainsAny(s, " \t'\"\\$`;&|")
}

// ParseError is a hooks.json cx cannot read: it is never rewritten.
type ParseError struct {
	Path string
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s: %v (cx will not rewrite a file it cannot parse; fix or move it, then run the same `cx ctl` command again)", e.Path, e.Err)
}

type edit struct {
	start, end int
	text       string
}

func apply(src []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

func groupJSON(cxPath string, e Entry, indent, step string) string {
	cmd, _ := json.Marshal(Command(cxPath, e.Event))
	return fmt.Sprintf("{\n%s%s\"hooks\": [\n%s%s%s{\n%s%s%s%s\"type\": \"command\",\n%s%s%s%s\"command\": %s,\n%s%s%s%s\"timeout\": %d\n%s%s%s}\n%s%s]\n%s}",
		indent, step,
		indent, step, step,
		indent, step, step, step,
		indent, step, step, step, cmd,
		indent, step, step, step, e.Timeout,
		indent, step, step,
		indent, step,
		indent)
}

// indentStep guesses the file's indentation unit (two spaces by default).
func indentStep(src []byte) string {
	for _, line := range bytes.Split(src, []byte("\n")) {
		t := bytes.TrimLeft(line, " \t")
		if len(t) < len(line) && len(t) > 0 {
			return string(line[:len(line)-len(t)])
		}
	}
	return "  "
}

// Merge adds cx's hook entries (for cxPath) to a hooks.json, after the
// entries already there, as text edits; an entry of cx's with another path
// (cx moved) gets the new path in place, and a second one of an event's
// goes (dedupe). It reports whether anything changed.
func Merge(path string, src []byte, cxPath string) ([]byte, bool, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return fresh(cxPath), true, nil
	}
	root, err := parseSpans(src)
	if err != nil {
		return nil, false, &ParseError{path, err}
	}
	if root.kind != '{' {
		return nil, false, &ParseError{path, fmt.Errorf("the top level is not an object")}
	}
	deduped, changed, err := dedupe(path, src, cxPath)
	if err != nil {
		return nil, false, err
	}
	if changed {
		out, _, err := Merge(path, deduped, cxPath)
		return out, true, err
	}
	step := indentStep(src)
	hooks := root.get("hooks")
	if hooks == nil {
		var groups []string
		for _, e := range Entries {
			groups = append(groups, fmt.Sprintf("%s%s%q: [\n%s%s%s%s\n%s%s]", step, step, e.Event, step, step, step, groupJSON(cxPath, e, step+step+step, step), step, step))
		}
		text := fmt.Sprintf("%q: {\n%s\n%s}", "hooks", strings.Join(groups, ",\n"), step)
		return insertMember(src, root, step, text), true, nil
	}
	if hooks.kind != '{' {
		return nil, false, &ParseError{path, fmt.Errorf(`"hooks" is not an object`)}
	}
	var edits []edit
	var missing []Entry
	for _, e := range Entries {
		arr := hooks.get(e.Event)
		if arr == nil {
			missing = append(missing, e)
			continue
		}
		if arr.kind != '[' {
			return nil, false, &ParseError{path, fmt.Errorf("hooks.%s is not an array", e.Event)}
		}
		want := Command(cxPath, e.Event)
		found := false
		for _, g := range arr.elems {
			for _, h := range g.get("hooks").elemsOrNil() {
				c := h.get("command")
				if c == nil || c.kind != '"' || !isOurs(c.str, e.Event, cxPath) {
					continue
				}
				found = true
				if c.str != want {
					q, _ := json.Marshal(want)
					edits = append(edits, edit{c.start, c.end, string(q)})
				}
			}
		}
		if found {
			continue
		}
		if len(arr.elems) == 0 {
			ind := lineIndent(src, arr.start)
			edits = append(edits, edit{arr.start, arr.end, "[\n" + ind + step + groupJSON(cxPath, e, ind+step, step) + "\n" + ind + "]"})
			continue
		}
		last := arr.elems[len(arr.elems)-1]
		ind := lineIndent(src, last.start)
		sep := ",\n" + ind
		if lineIndent(src, arr.start) == ind && bytes.IndexByte(src[arr.start:last.start], '\n') < 0 {
			sep = ", " // a one-line array stays one line up to our entry
		}
		edits = append(edits, edit{last.end, last.end, sep + groupJSON(cxPath, e, ind, step)})
	}
	if len(missing) > 0 {
		ind := step + step
		if len(hooks.keys) > 0 {
			ind = lineIndent(src, hooks.keys[len(hooks.keys)-1].keyStart)
		}
		var members []string
		for _, e := range missing {
			members = append(members, fmt.Sprintf("%q: [\n%s%s%s\n%s]", e.Event, ind, step, groupJSON(cxPath, e, ind+step, step), ind))
		}
		text := strings.Join(members, ",\n"+ind)
		if len(hooks.keys) == 0 {
			outer := lineIndent(src, hooks.start)
			edits = append(edits, edit{hooks.start, hooks.end, "{\n" + ind + text + "\n" + outer + "}"})
		} else {
			lastEnd := hooks.keys[len(hooks.keys)-1].memberEnd
			edits = append(edits, edit{lastEnd, lastEnd, ",\n" + ind + text})
		}
	}
	if len(edits) == 0 {
		return src, false, nil
	}
	out := apply(src, edits)
	if _, err := parseSpans(out); err != nil {
		return nil, false, fmt.Errorf("internal error: merged %s does not parse: %w", path, err)
	}
	return out, true, nil
}

func (n *node) elemsOrNil() []*node {
	if n == nil || n.kind != '[' {
		return nil
	}
	return n.elems
}

// insertMember adds "key": value as the root object's last member.
func insertMember(src []byte, root *node, step, text string) []byte {
	if len(root.keys) == 0 {
		return apply(src, []edit{{root.start, root.end, "{\n" + step + text + "\n}"}})
	}
	end := root.keys[len(root.keys)-1].memberEnd
	return apply(src, []edit{{end, end, ",\n" + step + text}})
}

func fresh(cxPath string) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"hooks\": {\n")
	for i, e := range Entries {
		fmt.Fprintf(&b, "    %q: [\n      %s\n    ]", e.Event, groupJSON(cxPath, e, "      ", "  "))
		if i < len(Entries)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  }\n}\n")
	return []byte(b.String())
}

// Remove takes cx's hook entries out of a hooks.json as text edits: a group
// whose handlers are all cx's (any cx's, or the one at cxPath: isOurs) goes
// whole; otherwise only cx's handler.
// Event arrays left empty are removed when dropEmpty says so (they were
// created by install).
func Remove(path string, src []byte, cxPath string, dropEmpty func(event string) bool) ([]byte, bool, error) {
	return removeHandlers(path, src, func(event string, h *node) bool { return ours(h, event, cxPath) }, dropEmpty)
}

// ours reports whether handler h of event is cx's (isOurs).
func ours(h *node, event, cxPath string) bool {
	c := h.get("command")
	return c != nil && c.kind == '"' && isOurs(c.str, event, cxPath)
}

// dedupe leaves one handler of cx's for each event, the first: installs
// from two paths, or by a cx under another name before isOurs knew its
// handler, left two, and Codex ran each of those hooks twice.
func dedupe(path string, src []byte, cxPath string) ([]byte, bool, error) {
	seen := map[string]bool{}
	return removeHandlers(path, src, func(event string, h *node) bool {
		if !ours(h, event, cxPath) {
			return false
		}
		if !seen[event] {
			seen[event] = true
			return false
		}
		return true
	}, nil)
}

// removeHandlers takes the handlers drop names out of a hooks.json as text
// edits (drop is asked once for each handler, in the file's order): a group
// whose handlers all go goes whole. Event arrays left empty are removed
// when dropEmpty says so.
func removeHandlers(path string, src []byte, drop func(event string, h *node) bool, dropEmpty func(event string) bool) ([]byte, bool, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return src, false, nil
	}
	root, err := parseSpans(src)
	if err != nil {
		return nil, false, &ParseError{path, err}
	}
	hooks := root.get("hooks")
	if hooks == nil || hooks.kind != '{' {
		return src, false, nil
	}
	var edits []edit
	dropMembers := map[int]bool{}
	for mi, m := range hooks.keys {
		arr := m.value
		if arr.kind != '[' {
			continue
		}
		var keep, dropGroups []*node
		for _, g := range arr.elems {
			hs := g.get("hooks").elemsOrNil()
			gone := map[*node]bool{}
			for _, h := range hs {
				if drop(m.key, h) {
					gone[h] = true
				}
			}
			switch {
			case len(gone) > 0 && len(gone) == len(hs):
				dropGroups = append(dropGroups, g)
			case len(gone) > 0:
				keep = append(keep, g)
				edits = append(edits, removeElems(g.get("hooks"), func(h *node) bool { return gone[h] })...)
			default:
				keep = append(keep, g)
			}
		}
		if len(dropGroups) == 0 {
			continue
		}
		if len(keep) == 0 && dropEmpty != nil && dropEmpty(m.key) {
			dropMembers[mi] = true
			continue
		}
		dropSet := map[*node]bool{}
		for _, d := range dropGroups {
			dropSet[d] = true
		}
		edits = append(edits, removeElems(arr, func(n *node) bool { return dropSet[n] })...)
	}
	edits = append(edits, removeMembers(hooks, dropMembers)...)
	if len(edits) == 0 {
		return src, false, nil
	}
	out := apply(src, edits)
	if _, err := parseSpans(out); err != nil {
		return nil, false, fmt.Errorf("internal error: %s after removal does not parse: %w", path, err)
	}
	return out, true, nil
}

// removeElems removes the array elements matching drop, with their commas.
func removeElems(arr *node, drop func(*node) bool) []edit {
	return removeRuns(len(arr.elems), func(i int) bool { return drop(arr.elems[i]) },
		func(i int) int { return arr.elems[i].start }, func(i int) int { return arr.elems[i].end }, arr.start+1, arr.end-1)
}

// removeMembers removes the object's members at the given indexes, with
// their commas.
func removeMembers(obj *node, drop map[int]bool) []edit {
	return removeRuns(len(obj.keys), func(i int) bool { return drop[i] },
		func(i int) int { return obj.keys[i].keyStart }, func(i int) int { return obj.keys[i].memberEnd }, obj.start+1, obj.end-1)
}

// removeRuns removes the items (of n) drop names, with their commas: each
// run of consecutive dropped items goes from the end of the item before it
// (or, for a leading run, up to the start of the item after it; all of
// them, everything from open to close).
func removeRuns(n int, drop func(int) bool, start, end func(int) int, open, close int) []edit {
	var edits []edit
	for a := 0; a < n; a++ {
		if !drop(a) {
			continue
		}
		b := a
		for b+1 < n && drop(b+1) {
			b++
		}
		switch {
		case a > 0:
			edits = append(edits, edit{end(a - 1), end(b), ""})
		case b == n-1:
			edits = append(edits, edit{open, close, ""})
		default:
			edits = append(edits, edit{start(a), start(b + 1), ""})
		}
		a = b
	}
	return edits
}
