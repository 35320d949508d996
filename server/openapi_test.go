package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestOpenAPIMatchesRoutes checks that the served OpenAPI document lists exactly the routes
// the server registers, and that every operation it lists reaches a handler.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, "sqlite")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	e.call("GET", "/api/v1/openapi.json", nil, 200, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var documented, registered []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range e.srv.routeTable() {
		registered = append(registered, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(registered)
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(registered, d) {
			t.Errorf("operation %s is in openapi.json but not registered", d)
		}
	}

	// Every documented operation reaches a handler: no 405 and no "no_route" from the mux.
	for _, d := range documented {
		method, path, _ := strings.Cut(d, " ")
		path = strings.NewReplacer("{id}", "999999", "{name}", "nosuch").Replace(path)
		if strings.HasSuffix(path, "/logout") {
			continue // would end the session other requests use
		}
		resp := e.raw(method, path, e.token, nil, map[string]any{})
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		if resp.StatusCode == 405 || eb.Error.Code == "no_route" {
			t.Errorf("%s %s: %d %s: the documented operation is not served", method, path, resp.StatusCode, eb.Error.Code)
		}
	}
}
