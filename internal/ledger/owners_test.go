package ledger

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The package doc's table of tables names each table's writers; this test
// reads which tables each exported method of DB and Tx writes (the SQL
// it and the functions it calls hold), finds every call of such a method
// in the module's other packages, and fails when a package writes a table
// the doc does not name it a writer of — or the doc names a writer that
// writes nothing there (a table that moved stays written down right).
//
// It reads source, not types: a write method's name must be one no other
// type in the module uses for a method, or its callers are taken for
// writers (a finding that names a package which writes nothing).
//
// It also holds ledger.Open to the entry points (openers): the packages
// below them get the DB they are handed.
func TestLedgerWritersAreTheDocumented(t *testing.T) {
	doc := documentedWriters(t)
	writes := methodWrites(t)
	root := moduleRoot(t)
	actual := map[string]map[string]bool{} // table → packages that write it
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg, _ := filepath.Rel(root, filepath.Dir(path))
		if pkg == "internal/ledger" || strings.HasPrefix(pkg, "internal/testing/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imported := map[string]bool{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imported[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && imported[x.Name] {
				if x.Name == "ledger" && sel.Sel.Name == "Open" && !slices.Contains(openers, pkg) {
					t.Errorf("%s calls ledger.Open: only the entry points (%s) open the ledger, and hand it down", path[len(root)+1:], strings.Join(openers, ", "))
				}
				return true // a package's function, not a method
			}
			for table := range writes[sel.Sel.Name] {
				if actual[table] == nil {
					actual[table] = map[string]bool{}
				}
				actual[table][pkg] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table, pkgs := range actual {
		for pkg := range pkgs {
			if !doc[table][pkg] {
				t.Errorf("%s writes table %s, which the ledger's package doc does not name it a writer of", pkg, table)
			}
		}
	}
	for table, pkgs := range doc {
		for pkg := range pkgs {
			if pkg != "internal/ledger" && !actual[table][pkg] {
				t.Errorf("the package doc names %s a writer of %s, which it does not write", pkg, table)
			}
		}
	}
	if t.Failed() || testing.Verbose() {
		var lines []string
		for table, pkgs := range actual {
			lines = append(lines, table+": "+strings.Join(slices.Sorted(keys(pkgs)), ", "))
		}
		sort.Strings(lines)
		t.Logf("tables and the packages that write them:\n%s", strings.Join(lines, "\n"))
	}
}

func keys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// docRow is a row of the package doc's table: tables, their file, their
// writers (package paths, ";"-separated, each maybe with a note in
// parentheses), then " — " and what they hold.
var docRow = regexp.MustCompile(`^//\t([a-z_]+(?:, [a-z_]+)*)\s{2,}(\S+\.go)\s{2,}(.+?) — `)

func documentedWriters(t *testing.T) map[string]map[string]bool {
	t.Helper()
	data, err := os.ReadFile("ledger.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "package ledger" {
			break
		}
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, table := range strings.Split(m[1], ", ") {
			out[table] = map[string]bool{}
			for _, w := range strings.Split(m[3], ";") {
				w, _, _ = strings.Cut(strings.TrimSpace(w), " (")
				out[table][w] = true
			}
		}
	}
	for _, m := range regexp.MustCompile(`CREATE (?:VIRTUAL )?TABLE ([a-z_]+)`).FindAllStringSubmatch(strings.Join(migrations, "\n"), -1) {
		if out[m[1]] == nil {
			t.Errorf("table %s has no row in the package doc's table of tables", m[1])
		}
	}
	return out
}

// writeSQL finds the table a statement writes.
var writeSQL = regexp.MustCompile(`(?i)\b(?:INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM|REPLACE INTO)\s+([a-z_]+)`)

// dynamicWrite is a statement whose table is spliced in: the function's
// string literals that name tables are what it writes.
var dynamicWrite = regexp.MustCompile(`(?i)\b(?:INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM)\s*$`)

// methodWrites maps each exported method of DB and Tx that writes a table
// (itself, or through the package's functions it calls) to those tables.
func methodWrites(t *testing.T) map[string]map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	type fn struct {
		writes map[string]bool
		calls  []string
	}
	fns := map[string]*fn{}
	exported := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				recv := fd.Recv.List[0].Type
				if st, ok := recv.(*ast.StarExpr); ok {
					recv = st.X
				}
				if id, ok := recv.(*ast.Ident); ok && (id.Name == "DB" || id.Name == "Tx" || id.Name == "SinkStore") && ast.IsExported(name) {
					exported[name] = true
				}
			}
			f := fns[name]
			if f == nil {
				f = &fn{writes: map[string]bool{}}
				fns[name] = f
			}
			var lits []string
			dynamic := false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.BasicLit:
					if n.Kind == token.STRING {
						s, _ := strconv.Unquote(n.Value)
						lits = append(lits, s)
						for _, m := range writeSQL.FindAllStringSubmatch(s, -1) {
							if t := strings.ToLower(m[1]); t != "set" { // ON CONFLICT … DO UPDATE SET
								f.writes[t] = true
							}
						}
						dynamic = dynamic || dynamicWrite.MatchString(s)
					}
				case *ast.CallExpr:
					switch fun := n.Fun.(type) {
					case *ast.Ident:
						f.calls = append(f.calls, fun.Name)
					case *ast.SelectorExpr:
						f.calls = append(f.calls, fun.Sel.Name)
					case *ast.IndexExpr: // a generic function
						if id, ok := fun.X.(*ast.Ident); ok {
							f.calls = append(f.calls, id.Name)
						}
					}
				}
				return true
			})
			if dynamic {
				for _, s := range lits {
					if regexp.MustCompile(`^[a-z_]+$`).MatchString(s) {
						f.writes[s] = true
					}
				}
			}
		}
	}
	// What a function writes includes what the functions it calls write.
	for changed := true; changed; {
		changed = false
		for _, f := range fns {
			for _, c := range f.calls {
				if g := fns[c]; g != nil && g != f {
					for w := range g.writes {
						if !f.writes[w] {
							f.writes[w], changed = true, true
						}
					}
				}
			}
		}
	}
	out := map[string]map[string]bool{}
	for name := range exported {
		if len(fns[name].writes) > 0 {
			out[name] = fns[name].writes
		}
	}
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the ledger package")
		}
		dir = parent
	}
}

// openers are the entry points, the only packages that call ledger.Open
// (ARCHITECTURE.md's rules).
var openers = []string{"cmd/cx", "hookserver", "supervisor", "setup", "mcpserver"}
