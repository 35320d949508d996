package otlp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-scheduler/sundial/internal/tracing"
)

// received collects the span names a collector was sent.
type received struct {
	mu    sync.Mutex
	names []string
}

func (r *received) add(req *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.names = append(r.names, s.Name)
			}
		}
	}
}

func (r *received) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	got *received
}

func (c grpcCollector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.got.add(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// exportOne traces one fire through a Tracer on a Provider and shuts it down, which sends the
// spans.
func exportOne(t *testing.T, endpoint, protocol string) {
	t.Helper()
	ctx := context.Background()
	tp, err := Provider(ctx, endpoint, protocol, "sundial-test")
	if err != nil {
		t.Fatal(err)
	}
	tr, shutdown := tracing.New(tp), tp.Shutdown
	now := time.Now()
	fctx, root := tr.StartFire(ctx, tracing.Fire{ExecutionID: 1, JobID: 2, Job: "g/j"}, now.Add(-time.Second), now)
	_, run := tr.StartRun(fctx, false)
	tracing.End(run, "", nil, now)
	tr.Complete(root, "", "succeeded", now, now)
	tracing.End(root, "succeeded", nil, now)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		t.Fatalf("shutdown (the export): %v", err)
	}
}

// TestProviderExportsOverHTTP: with an http endpoint, the provider sends the fire's four spans
// to the collector's /v1/traces.
func TestProviderExportsOverHTTP(t *testing.T) {
	got := &received{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("export to %s: not an OTLP trace request", r.URL.Path)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got.add(&req)
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer hs.Close()
	exportOne(t, hs.URL, "")
	if n := len(got.get()); n != 4 {
		t.Fatalf("the collector got spans %v, want the fire's 4", got.get())
	}
}

// TestProviderExportsOverGRPC: with protocol grpc, the same spans reach a gRPC collector.
func TestProviderExportsOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := &received{}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, grpcCollector{got: got})
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()
	exportOne(t, "http://"+ln.Addr().String(), "grpc")
	if n := len(got.get()); n != 4 {
		t.Fatalf("the collector got spans %v, want the fire's 4", got.get())
	}
}

// TestProviderRefusesUnknownProtocol: a protocol other than http/protobuf or grpc is an error
// naming it, not a silent fallback.
func TestProviderRefusesUnknownProtocol(t *testing.T) {
	if _, err := Provider(context.Background(), "http://127.0.0.1:1", "http/json", "x"); err == nil {
		t.Fatal("protocol http/json accepted")
	}
}
