package web

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/workflow"
)

// The editor lists an input for every JSON field of a workflow's nodes, edges and graph, so
// a stored workflow saved through the console keeps every setting. A field added to package
// workflow fails here until the editor has it (one entry in nodeField, edgeField or
// graphField).
func TestEditorCoversGraphFields(t *testing.T) {
	for _, c := range []struct {
		of     any
		fields []rowField
		skip   []string
	}{
		{workflow.Node{}, nodeField, nil},
		{workflow.Edge{}, edgeField, nil},
		{workflow.Graph{}, graphField, []string{"nodes", "edges"}},
	} {
		typ := reflect.TypeOf(c.of)
		for f := range typ.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "" || key == "-" || slices.Contains(c.skip, key) {
				continue
			}
			if !slices.ContainsFunc(c.fields, func(r rowField) bool { return r.Key == key }) {
				t.Errorf("the console's workflow editor has no input for %s's field %q", typ.Name(), key)
			}
		}
	}
}
