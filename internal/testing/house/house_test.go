// Package house checks the shape of the repository against what ARCHITECTURE.md
// says of it: the code map's imports, and test support kept out of cx.
package house

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// goList runs `go list` in the module root with args.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"list"}, args...)...)
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

const module = "cx/"

// TestCodeMap holds ARCHITECTURE.md's code map to the code: a row for every
// package, each row naming exactly the packages of cx its own import, and
// every import pointing down the table (test support aside).
func TestCodeMap(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "## Code map")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no code map (## Code map)")
	}
	if i := strings.Index(table, "\n| package"); i >= 0 {
		table = table[i+1:]
	}
	table, _, _ = strings.Cut(table, "\n\n") // the table ends at the first blank line
	tick := regexp.MustCompile("`([^`]+)`")
	row := map[string]int{}            // package → its row
	named := map[int]map[string]bool{} // row → the packages of cx it says it imports
	n := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "| `") || len(cells) != 3 {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[0], -1) {
			row[m[1]] = n
		}
		named[n] = map[string]bool{}
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			named[n][m[1]] = true
		}
		n++
	}
	imports := map[string]map[string]bool{} // package → the packages of cx it imports
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		f := strings.Fields(line)
		p := strings.TrimPrefix(f[0], module)
		imports[p] = map[string]bool{}
		for _, q := range f[1:] {
			if strings.HasPrefix(q, module) {
				imports[p][strings.TrimPrefix(q, module)] = true
			}
		}
	}
	for p, qs := range imports {
		r, ok := row[p]
		if !ok {
			t.Errorf("package %s has no row in ARCHITECTURE.md's code map", p)
			continue
		}
		for q := range qs {
			if row[q] == r {
				continue // a row of several packages
			}
			if !named[r][q] {
				t.Errorf("%s imports %s; its row in the code map does not say so", p, q)
			}
			if row[q] < r && !strings.HasPrefix(p, "internal/testing/") {
				t.Errorf("%s imports %s, a row above it: imports point down the table", p, q)
			}
		}
	}
	for p, r := range row {
		if _, ok := imports[p]; !ok {
			t.Errorf("the code map has a row for %s, which is no package", p)
			continue
		}
		for q := range named[r] {
			if _, isPkg := imports[q]; isPkg && row[q] != r && !slices.ContainsFunc(packagesOf(row, r), func(p string) bool { return imports[p][q] }) {
				t.Errorf("the code map says %s imports %s, which it does not", p, q)
			}
		}
	}
}

func packagesOf(row map[string]int, r int) []string {
	var out []string
	for p, pr := range row {
		if pr == r {
			out = append(out, p)
		}
	}
	return out
}

// TestTestSupportIsNotLinked: nothing under internal/testing is in the cx
// binary.
func TestTestSupportIsNotLinked(t *testing.T) {
	for _, p := range goList(t, "-deps", "./cmd/cx") {
		if strings.HasPrefix(p, module+"internal/testing/") {
			t.Errorf("cx links %s: test support must stay out of the binary", p)
		}
	}
}

// TestStateMachineKnowsNoSink: the state machine (lifecycle) reaches no
// concrete sink and no part of recall, even indirectly — the entry points
// build the sinks and hand them over (ARCHITECTURE.md's rules).
func TestStateMachineKnowsNoSink(t *testing.T) {
	for _, p := range goList(t, "-deps", "./lifecycle") {
		switch {
		case p == module+"internal/sinks", strings.HasPrefix(p, module+"internal/sink/"), p == module+"internal/recall", strings.HasPrefix(p, module+"internal/recall/"):
			t.Errorf("lifecycle depends on %s", p)
		}
	}
}

// Every CX_TEST_ switch production code reads is listed where it is read
// (internal/testpoint), the crash and panic points included: the lists
// hold exactly the points the code has, and the README points there
// (issue 52: it named 4 of 9 crash points).
func TestTestSwitchesListedWhereRead(t *testing.T) {
	dir := root(t)
	var code strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testing" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			code.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	points := func(fn string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`testpoint\.`+fn+`\("([a-z-]+)"\)`).FindAllStringSubmatch(code.String(), -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
		slices.Sort(out)
		return out
	}
	tp, err := os.ReadFile(filepath.Join(dir, "internal", "testpoint", "testpoint.go"))
	if err != nil {
		t.Fatal(err)
	}
	listed := func(name string) []string {
		m := regexp.MustCompile(`var ` + name + ` = \[\]string\{([^}]*)\}`).FindSubmatch(tp)
		if m == nil {
			t.Fatalf("testpoint has no %s", name)
		}
		var out []string
		for _, q := range regexp.MustCompile(`"([a-z-]+)"`).FindAllSubmatch(m[1], -1) {
			out = append(out, string(q[1]))
		}
		slices.Sort(out)
		return out
	}
	if got, want := listed("CrashPoints"), points("Crash"); !slices.Equal(got, want) {
		t.Errorf("testpoint.CrashPoints %v, the code's Crash points %v", got, want)
	}
	if got, want := listed("PanicPoints"), points("Panic"); !slices.Equal(got, want) {
		t.Errorf("testpoint.PanicPoints %v, the code's Panic points %v", got, want)
	}
	// Every switch production code names is testpoint's.
	for _, v := range regexp.MustCompile(`CX_TEST_[A-Z_]+`).FindAllString(code.String(), -1) {
		if !bytes.Contains(tp, []byte(`"`+v+`"`)) {
			t.Errorf("%s is read outside internal/testpoint, or not listed there", v)
		}
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("`CX_TEST_*`")) || !bytes.Contains(readme, []byte("internal/testpoint")) {
		t.Error("the README's CX_TEST_* row does not point to internal/testpoint")
	}
}
