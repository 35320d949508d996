package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// TestVersionEverywhere: the binary, the API's /info and the metrics' build info all say the
// same version.
func TestVersionEverywhere(t *testing.T) {
	v := version.Version()
	if code, out, _ := runCLI(t, "", "--version"); code != 0 || out != "sundial version "+v+"\n" {
		t.Errorf("sundial --version: exit %d, %q, want %q", code, out, v)
	}
	s := startAPIServer(t)
	if in := mustJSON[api.Info](t, s, "node", "info"); in.Version != v || in.GoVersion == "" || in.NodeID == "" {
		t.Errorf("node info: %+v, want version %q, the Go release and the node", in, v)
	}
	req, err := http.NewRequest("GET", s.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `sundial_build_info{goversion="`) || !strings.Contains(string(body), `version="`+v+`"} 1`) {
		t.Errorf("metrics have no sundial_build_info with version %q", v)
	}
}
