package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The ownership rules ARCHITECTURE.md states, held to the code: who may
// import what, and who may open the ledger.
func TestOwnershipRules(t *testing.T) {
	imports := map[string][]string{} // package → the packages of cx it imports
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		f := strings.Fields(line)
		p := strings.TrimPrefix(f[0], module)
		for _, q := range f[1:] {
			if strings.HasPrefix(q, module) {
				imports[p] = append(imports[p], strings.TrimPrefix(q, module))
			}
		}
	}
	for _, q := range imports["lifecycle"] {
		if q == "inject" || q == "internal/recall" || q == "internal/readmodel" {
			t.Errorf("lifecycle imports %s: the state machine returns facts, its caller builds blocks and views", q)
		}
	}
	for p, qs := range imports {
		for _, q := range qs {
			if strings.HasPrefix(q, "internal/sink/") && p != "internal/sinks" && !strings.HasPrefix(p, "internal/sink/") && !strings.HasPrefix(p, "internal/testing/") {
				t.Errorf("%s imports the concrete sink %s: only internal/sinks names them", p, q)
			}
		}
	}
	// ledger.Open in non-test code: the entry points only.
	entry := []string{"cmd/cx", "hookserver", "supervisor", "setup", "mcpserver"}
	dir := root(t)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		pkg, _ := filepath.Rel(dir, filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Open" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "ledger" && !slices.Contains(entry, filepath.ToSlash(pkg)) {
				t.Errorf("%s calls ledger.Open: only the entry points (%s) open the ledger", path[len(dir)+1:], strings.Join(entry, ", "))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
