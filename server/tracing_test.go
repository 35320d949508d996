package server

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/tracing"
	"github.com/sundial-scheduler/sundial/internal/tracing/otlp"
)

// spansOf returns the spans of one trace the exporter holds, by name.
func spansOf(exp *tracetest.InMemoryExporter, id trace.TraceID) map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == id {
			out[s.Name] = s
		}
	}
	return out
}

func names(m map[string]tracetest.SpanStub) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// checkChild fails unless child is a span of parent's trace under parent.
func checkChild(t *testing.T, spans map[string]tracetest.SpanStub, child, parent string) {
	t.Helper()
	c, p := spans[child], spans[parent]
	if c.Parent.SpanID() != p.SpanContext.SpanID() || c.SpanContext.TraceID() != p.SpanContext.TraceID() {
		t.Errorf("span %s: parent %s, want %s (%s)", child, c.Parent.SpanID(), parent, p.SpanContext.SpanID())
	}
}

// TestTraceInProcessFire: with a tracer, a fire of an in-process job is one trace (fire →
// acquire, run, complete) and the handler's context carries the run's span.
func TestTraceInProcessFire(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := otlp.NewProvider(sdktrace.NewSimpleSpanProcessor(exp), "sundial-test")
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	handlerSpan := make(chan trace.SpanContext, 1)
	e := newEnvOn(t, openStore(t, "sqlite"), func(c *Config) { c.Scheduler.Engine.TracerProvider = tp }, func(s *Server) {
		s.Register("traced", func(ctx context.Context) error {
			handlerSpan <- trace.SpanContextFromContext(ctx)
			return nil
		})
	})
	var job api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "traced", "handler": "traced",
		"triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, &job)
	var sc trace.SpanContext
	select {
	case sc = <-handlerSpan:
	case <-time.After(30 * time.Second):
		t.Fatal("the traced job did not run")
	}
	if !sc.IsValid() {
		t.Fatal("the handler's context carries no span")
	}
	var spans map[string]tracetest.SpanStub
	eventually(t, "the fire's root span to end after its result is written", func() bool {
		spans = spansOf(exp, sc.TraceID())
		return len(spans) == 4
	})
	if want := []string{tracing.SpanAcquire, tracing.SpanComplete, tracing.SpanFire, tracing.SpanRun}; !slices.Equal(names(spans), want) {
		t.Fatalf("spans of the fire: %v, want %v", names(spans), want)
	}
	if spans[tracing.SpanRun].SpanContext.SpanID() != sc.SpanID() {
		t.Errorf("the handler's span is not %s", tracing.SpanRun)
	}
	for _, child := range []string{tracing.SpanAcquire, tracing.SpanRun, tracing.SpanComplete} {
		checkChild(t, spans, child, tracing.SpanFire)
	}
	root := spans[tracing.SpanFire]
	if root.Parent.IsValid() {
		t.Errorf("the fire's span has a parent: %v", root.Parent)
	}
	if !slices.ContainsFunc(root.Attributes, func(kv attribute.KeyValue) bool {
		return string(kv.Key) == "sundial.execution.id" && kv.Value.AsInt64() > 0
	}) {
		t.Errorf("the fire's span does not name its execution: %v", root.Attributes)
	}
	if end, started := root.EndTime, spans[tracing.SpanComplete].EndTime; end.Before(started) {
		t.Errorf("the fire ended at %v, before its result was written at %v", end, started)
	}
}

// TestTraceRemoteFire: the /run request carries the fire's trace to an executor built on
// the SDK: the executor's span has the server's trace id under the dispatch span, the
// handler's context carries it, and the write of the result joins the same trace.
func TestTraceRemoteFire(t *testing.T) {
	serverExp, execExp := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	serverTP := otlp.NewProvider(sdktrace.NewSimpleSpanProcessor(serverExp), "sundial-test")
	execTP := otlp.NewProvider(sdktrace.NewSimpleSpanProcessor(execExp), "executor-test")
	t.Cleanup(func() { _ = serverTP.Shutdown(context.Background()); _ = execTP.Shutdown(context.Background()) })
	e := newEnvWith(t, "sqlite", func(c *Config) {
		c.ExecutorToken = execToken
		c.ExecutorHeartbeat = time.Second
		c.Scheduler.Engine.TracerProvider = serverTP
	})
	ex, err := executor.New(executor.Config{Server: e.url, Token: execToken, App: "billing", Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), TracerProvider: execTP})
	if err != nil {
		t.Fatal(err)
	}
	handlerSpan := make(chan trace.SpanContext, 1)
	ex.Handle("report", func(ctx context.Context) error {
		handlerSpan <- trace.SpanContextFromContext(ctx)
		return nil
	})
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })

	var job api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "report", "handler": "report", "app": "billing",
		"triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, &job)
	var sc trace.SpanContext
	select {
	case sc = <-handlerSpan:
	case <-time.After(30 * time.Second):
		t.Fatal("the remote job did not run")
	}
	var server map[string]tracetest.SpanStub
	eventually(t, "the result's write to join the trace", func() bool {
		server = spansOf(serverExp, sc.TraceID())
		return len(server) == 4
	})
	if want := []string{tracing.SpanAcquire, tracing.SpanComplete, tracing.SpanDispatch, tracing.SpanFire}; !slices.Equal(names(server), want) {
		t.Fatalf("server spans of the fire: %v, want %v", names(server), want)
	}
	eventually(t, "the executor's span to end", func() bool { return len(spansOf(execExp, sc.TraceID())) == 1 })
	run := spansOf(execExp, sc.TraceID())[tracing.SpanExecutorRun]
	if run.SpanContext.TraceID() != server[tracing.SpanFire].SpanContext.TraceID() {
		t.Fatalf("the executor's span is in trace %s, the fire in %s", run.SpanContext.TraceID(), server[tracing.SpanFire].SpanContext.TraceID())
	}
	if run.Parent.SpanID() != server[tracing.SpanDispatch].SpanContext.SpanID() || !run.Parent.IsRemote() {
		t.Errorf("the executor's span: parent %v, want the server's dispatch span %s", run.Parent, server[tracing.SpanDispatch].SpanContext.SpanID())
	}
	if sc.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("the handler's context carries span %s, want the executor's %s", sc.SpanID(), run.SpanContext.SpanID())
	}
	checkChild(t, server, tracing.SpanDispatch, tracing.SpanFire)
	if server[tracing.SpanComplete].Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("the result's write: parent %s, want the executor's span %s", server[tracing.SpanComplete].Parent.SpanID(), run.SpanContext.SpanID())
	}
}

// TestNoTracerNoSpans: without a tracer, nothing reaches a handler's context (tracing is off
// by default and costs a nil check).
func TestNoTracerNoSpans(t *testing.T) {
	handlerSpan := make(chan trace.SpanContext, 1)
	e := newEnvOn(t, openStore(t, "sqlite"), nil, func(s *Server) {
		s.Register("plain", func(ctx context.Context) error {
			handlerSpan <- trace.SpanContextFromContext(ctx)
			return nil
		})
	})
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "plain", "handler": "plain",
		"triggers": []any{map[string]any{"once": true}}}, http.StatusCreated, nil)
	select {
	case sc := <-handlerSpan:
		if sc.IsValid() {
			t.Errorf("a handler's context without tracing carries span %v", sc)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run")
	}
}
