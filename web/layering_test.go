package web_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleUsesOnlyTheServiceLayer keeps the console on one path into the system: it reads
// and changes only through the server's operations (server.Ops, the same the API's routes
// call), so it neither forges HTTP requests to the API's handlers nor reaches the database or
// the scheduler node on its own, where its access checks and error texts would drift from
// the API's.
func TestConsoleUsesOnlyTheServiceLayer(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); p == "net/http/httptest" || strings.HasSuffix(p, "/store/sqlstore") ||
				strings.HasSuffix(p, "/engine") {
				t.Errorf("%s imports %s: the console works through server.Ops", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pos := fset.Position(sel.Pos())
			if pkg, ok := sel.X.(*ast.Ident); ok {
				switch pkg.Name + "." + sel.Sel.Name {
				case "http.NewRequest", "http.NewRequestWithContext":
					t.Errorf("%s: %s.%s forges a request: call the operation (server.Ops) instead", pos, pkg.Name, sel.Sel.Name)
				case "store.Store", "store.Querier", "store.Tx", "store.InTx":
					t.Errorf("%s: %s.%s is the database: read through server.Ops instead", pos, pkg.Name, sel.Sel.Name)
				}
			}
			switch sel.Sel.Name {
			case "Scheduler", "Engine", "Store":
				// The node and its database, past the operations' access checks.
				t.Errorf("%s: .%s reaches past the service layer", pos, sel.Sel.Name)
			case "ServeHTTP":
				// Only the console's own router (or the handler a middleware wraps) serves its
				// requests; the API's handlers are not the console's to call.
				if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name != "mux" {
					t.Errorf("%s: a call of ServeHTTP hands the console's request to another handler", pos)
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
