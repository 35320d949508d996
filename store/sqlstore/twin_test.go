package sqlstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOneWayIntoTheLiveTable: every path that creates an execution — acquisition of a due
// trigger, an automatic or a manual retry, a recovery re-run, a misfire policy's fire, a
// broadcast's shards, a manual run — reaches the live table through ExecutionsInsert, whose
// statements (insertExecutions, insertExecutionsNoReturning) refuse a fire whose twin is live
// or has ended, and then probe again for a twin that ended during the insert (insertLive):
// the conformance suite's NoEndedTwin and NoTwinWhileEnding. This test keeps it so: it fails
// when another function of the package writes an INSERT into executions_live, and the
// history is reached only by moving rows out of the live table, whose key they keep.
func TestOneWayIntoTheLiveTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	history := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s := strings.ToUpper(lit.Value)
				if strings.Contains(s, "INSERT") && strings.Contains(s, "INTO EXECUTIONS_LIVE") {
					live[fn.Name.Name] = true
				}
				if strings.Contains(s, "INSERT") && strings.Contains(s, "INTO EXECUTIONS (") {
					history[fn.Name.Name] = true
				}
				return true
			})
		}
	}
	if got, want := sortedKeys(live), []string{"insertExecutions", "insertExecutionsNoReturning"}; !slices.Equal(got, want) {
		t.Errorf("functions inserting into executions_live: %v, want only %v (ExecutionsInsert's)", got, want)
	}
	// insertHistory is moveToHistory's (rows read from the live table, deleted in the same
	// transaction) and completePostgres moves with DELETE ... RETURNING.
	if got, want := sortedKeys(history), []string{"completePostgres", "insertHistory"}; !slices.Equal(got, want) {
		t.Errorf("functions inserting into executions: %v, want only %v (moves out of the live table)", got, want)
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
