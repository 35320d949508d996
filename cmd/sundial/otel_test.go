package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-scheduler/sundial/api"
)

// otlpCollector is an OTLP/HTTP trace receiver: it keeps the names of the spans it is sent,
// by trace id.
type otlpCollector struct {
	mu     sync.Mutex
	traces map[string][]string
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "want an OTLP trace export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				id := string(s.TraceId)
				c.traces[id] = append(c.traces[id], s.Name)
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

var adminPassword = regexp.MustCompile(`with the password:\s+(\S+)`)

// TestServerExportsTraces runs `sundial server` as a real process with OpenTelemetry's
// OTEL_EXPORTER_OTLP_ENDPOINT set: a job's fire reaches the collector as one trace of the
// fire, its acquisition, its run and the write of its result (sent at the latest when the
// server stops).
func TestServerExportsTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	col := &otlpCollector{traces: map[string][]string{}}
	hs := httptest.NewServer(col)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	p := startServer(t, bin, dir, "--db", filepath.Join(dir, "sundial.db"), "OTEL_EXPORTER_OTLP_ENDPOINT="+hs.URL)
	m := adminPassword.FindStringSubmatch(p.banner)
	if m == nil {
		t.Fatalf("no admin password in the banner:\n%s", p.banner)
	}
	s := &apiServer{url: p.url, password: m[1]}
	s.token = s.createToken(t)
	job := mustJSON[api.Job](t, s, "job", "create", "traced", "--handler", "noop")
	run := mustJSON[api.Execution](t, s, "job", "run", "traced")
	eventually(t, "the run to succeed", func() bool {
		return mustJSON[api.Execution](t, s, "exec", "get", itoa(run.ID)).State == "succeeded"
	})
	p.stop(t)
	want := []string{"sundial.acquire", "sundial.complete", "sundial.fire", "sundial.run"}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, names := range col.traces {
		slices.Sort(names)
		if slices.Equal(names, want) {
			return
		}
	}
	t.Errorf("job %d's fire: the collector got traces %v, want one of spans %v", job.ID, col.traces, want)
}
