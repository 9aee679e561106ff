package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Compiled on first use: the hook binary starts on every turn.
var exitCodeREs = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Process exited with code (-?\d+)\s*$`), // exec_command (unified exec)
		regexp.MustCompile(`(?m)^Exit code: (-?\d+)\s*$`),               // shell / apply_patch
	}
})

// ExitCode parses a command's exit code from a tool output in the formats
// Codex writes: "Process exited with code N", "Exit code: N", or the legacy
// JSON {"output": …, "metadata": {"exit_code": N}}.
func ExitCode(output string) (int, bool) {
	head := output
	if len(head) > 4096 {
		head = head[:4096]
	}
	for _, re := range exitCodeREs() {
		if m := re.FindStringSubmatch(head); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return n, true
			}
		}
	}
	if strings.HasPrefix(strings.TrimSpace(output), "{") {
		var v struct {
			Metadata struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(output), &v) == nil && v.Metadata.ExitCode != nil {
			return *v.Metadata.ExitCode, true
		}
	}
	return 0, false
}

// PatchFile is one file an apply_patch body touches.
type PatchFile struct {
	Path     string // as written in the patch
	Op       string // add | update | delete
	MoveTo   string // update with "*** Move to:"
	Content  string // add: the full new content
	HasBytes bool   // Content is the complete file (add)
	Added    int    // lines the patch adds to the file
	Removed  int    // lines it takes out
}

// parsePatch reads the files of an apply_patch body ("*** Begin Patch" …
// "*** End Patch"). Unknown lines are ignored; it never fails.
func parsePatch(body string) []PatchFile {
	var out []PatchFile
	var cur *PatchFile
	var content strings.Builder
	flush := func() {
		if cur != nil {
			if cur.Op == "add" {
				cur.Content, cur.HasBytes = content.String(), true
			}
			out = append(out, *cur)
		}
		cur = nil
		content.Reset()
	}
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimSpace(line[len("*** Add File: "):]), Op: "add"}
		case strings.HasPrefix(line, "*** Update File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimSpace(line[len("*** Update File: "):]), Op: "update"}
		case strings.HasPrefix(line, "*** Delete File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimSpace(line[len("*** Delete File: "):]), Op: "delete"}
		case strings.HasPrefix(line, "*** Move to: ") && cur != nil:
			cur.MoveTo = strings.TrimSpace(line[len("*** Move to: "):])
		case strings.HasPrefix(line, "*** End Patch"), strings.HasPrefix(line, "*** Begin Patch"):
			flush()
		case cur != nil && strings.HasPrefix(line, "+"):
			cur.Added++
			if cur.Op == "add" {
				content.WriteString(line[1:])
				content.WriteByte('\n')
			}
		case cur != nil && strings.HasPrefix(line, "-"):
			cur.Removed++
		}
	}
	flush()
	return out
}

// ContentHash is the hash cx records for a file's bytes.
func ContentHash(b string) string {
	sum := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(sum[:])
}
