package config

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// Reading the file: a line cx cannot use is skipped, the rest is read.

// maxSkipped bounds the lines a config file may get wrong and still be
// read: past it the file is not read at all (ErrParse).
const maxSkipped = 8

// Skipped is a line of the config file cx could not use: a value of the
// wrong type (`max_chars = "lots"`) or a line that is not TOML
// (`grace = 5s`). cx reads the rest of the file and uses its default for
// what the line set.
type Skipped struct {
	Line  int    // 1-based
	Text  string // the line as written
	Key   string // the key it sets (dotted), as far as known
	Why   string // what is wrong with it, in TOML's words
	Write string // a line that would do, with cx's default value ("" unknown)
}

func (s Skipped) String() string {
	out := fmt.Sprintf("line %d, `%s`: %s — ignored, cx uses its default", s.Line, s.Text, s.Why)
	if s.Write != "" {
		out += "; write e.g. `" + s.Write + "`"
	}
	return out
}

// decode reads the file into c. A line TOML refuses, or whose value has
// the wrong type, is skipped (Skipped, and a warning): the rest of the file
// still counts, so one wrong value never stops a run from being recorded.
func (c *Config) decode(data string) error {
	lines := strings.Split(data, "\n")
	base := *c
	var md toml.MetaData
	for {
		var err error
		*c = base
		c.Skipped = append([]Skipped(nil), base.Skipped...)
		if md, err = toml.Decode(strings.Join(lines, "\n"), c); err == nil {
			break
		}
		n, key, why := decodeProblem(err)
		if n < 1 || n > len(lines) || len(base.Skipped) == maxSkipped || strings.TrimSpace(lines[n-1]) == "" {
			*c = base
			return fmt.Errorf("parse config %s: %w", c.Path, parseError{err})
		}
		sk := Skipped{Line: n, Text: strings.TrimSpace(lines[n-1]), Key: key, Why: why}
		sk.Write = writeLine(sk.Text, key)
		base.Skipped = append(base.Skipped, sk)
		lines[n-1] = "" // line numbers stay those of the file
	}
	for _, sk := range c.Skipped {
		c.Warnings = append(c.Warnings, fmt.Sprintf("config %s: %s", c.Path, sk))
	}
	var unknown []string
	for _, k := range md.Undecoded() {
		unknown = append(unknown, k.String())
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		c.Warnings = append(c.Warnings, fmt.Sprintf("config %s: unknown key %q (ignored)", c.Path, k))
	}
	return nil
}

var typeErrRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`) })

// decodeProblem is where a decode failed and why: the line, the key (for
// a wrong type, the full key; for a syntax error, the table) and TOML's
// message.
func decodeProblem(err error) (line int, key, why string) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Position.Line, pe.LastKey, pe.Message
	}
	if m := typeErrRE().FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		why := strings.Replace(m[3], "incompatible types: TOML value has type ", "the value is of type ", 1)
		why = strings.Replace(why, "; destination has type ", ", cx wants ", 1)
		return n, m[2], why
	}
	return 0, "", err.Error()
}

// writeLine is a line that sets what line meant to, with cx's default
// value: its key as written, the default of the full key (key, or the
// table key names joined with the line's own key).
func writeLine(line, key string) string {
	name, _, ok := strings.Cut(line, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return ""
	}
	full := key
	if !strings.HasSuffix(key, name) {
		full = strings.TrimSuffix(key+"."+name, ".")
	}
	v, ok := defaultValue(full)
	if !ok {
		return ""
	}
	return name + " = " + v
}

// defaultValue is cx's default for a dotted key, in TOML.
func defaultValue(key string) (string, bool) {
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(Default()); err != nil {
		return "", false
	}
	var m map[string]any
	if _, err := toml.Decode(b.String(), &m); err != nil {
		return "", false
	}
	var v any = m
	for _, part := range strings.Split(key, ".") {
		t, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = t[part]; !ok {
			return "", false
		}
	}
	if _, ok := v.(map[string]any); ok {
		return "", false
	}
	var out strings.Builder
	if err := toml.NewEncoder(&out).Encode(map[string]any{"v": v}); err != nil {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out.String()), "v = ")), true
}
