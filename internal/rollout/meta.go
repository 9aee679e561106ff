package rollout

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

var turnIDUUID = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`)
})

// uuidV7Time is the creation time a UUIDv7 carries.
func uuidV7Time(id string) (time.Time, bool) {
	if !turnIDUUID().MatchString(id) {
		return time.Time{}, false
	}
	b, err := hex.DecodeString(strings.ReplaceAll(id, "-", "")[:12])
	if err != nil {
		return time.Time{}, false
	}
	var ms int64
	for _, x := range b {
		ms = ms<<8 | int64(x)
	}
	return time.UnixMilli(ms), true
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// OneLine is s on one line (runs of whitespace, newlines included, become
// one space) of at most n runes, the last an ellipsis when cut.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// Bound cuts s to at most n characters (runes), marking the cut.
func Bound(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n {
			break
		}
		count++
	}
	return s[:i] + fmt.Sprintf("… [%d chars cut]", utf8.RuneCountInString(s[i:]))
}

// maxMetaLine bounds the first line ReadMeta reads: 0.169's session_meta
// carries the base instructions (tens of KiB).
const maxMetaLine = 1 << 20

// ReadMeta reads a rollout's identity, its first line's session_meta,
// without reading the rest of the file.
func ReadMeta(path string) (SessionMeta, error) {
	f, err := Open(path)
	if err != nil {
		return SessionMeta{}, fmt.Errorf("read rollout %s: %w", path, err)
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, maxMetaLine), 64<<10).ReadBytes('\n')
	if err != nil {
		return SessionMeta{}, fmt.Errorf("read rollout %s: no complete first line: %w", path, err)
	}
	a := newAssembler(Options{}.withDefaults(), nil)
	a.add(parseLine(Line{Data: bytes.TrimSuffix(line, []byte("\n")), Size: int64(len(line) - 1)}), int64(len(line)))
	if a.meta == nil {
		return SessionMeta{}, fmt.Errorf("read rollout %s: the first line is not a session_meta", path)
	}
	return *a.meta, nil
}

// IDTime is the creation time a thread id carries (Codex's ids are
// UUIDv7s); false when the id is no UUIDv7.
func IDTime(id string) (time.Time, bool) { return uuidV7Time(id) }
