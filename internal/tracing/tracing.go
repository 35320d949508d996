// Package tracing is Sundial's OpenTelemetry tracing of fires: one trace per fire, from its
// acquisition through the handler run (in process) or the dispatch to an executor (remote)
// to the write of its result. The engine calls it at those points; a nil *Tracer is tracing
// off, and every method of a nil *Tracer returns at once, so a node without an OTLP endpoint
// pays one nil check per call.
//
// The W3C trace context travels to executors in the /run request's traceparent header
// (dispatch injects it, the executor SDK extracts it into the handler's context) and back
// with the executor's result, so the result's write joins the fire's trace on whichever node
// the executor reports to.
//
// It uses the OpenTelemetry API only: the SDK and the OTLP exporters are wired by the binary
// (cmd/sundial), so the engine and every embedder of it link neither.
package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Span names, one per step of a fire.
const (
	SpanFire     = "sundial.fire"     // the root: acquisition to the end of the fire on this node
	SpanAcquire  = "sundial.acquire"  // acquired by this node until claimed to run
	SpanRun      = "sundial.run"      // an in-process handler
	SpanDispatch = "sundial.dispatch" // the hand-over to an executor (POST /run)
	SpanComplete = "sundial.complete" // the result's write
	// SpanExecutorRun is the executor SDK's span around a handler, a child of SpanDispatch.
	SpanExecutorRun = "sundial.executor.run"
)

// Propagator is the one propagation format: W3C trace context.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Tracer makes the spans of fires. The zero of *Tracer (nil) is tracing off.
type Tracer struct {
	t trace.Tracer
}

// New returns a Tracer on tp; nil for a nil tp.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{t: tp.Tracer("github.com/sundial-scheduler/sundial")}
}

// Fire is what a span of a fire names.
type Fire struct {
	ExecutionID, JobID int64
	Job, Handler, Kind string
	Attempt            int
	ScheduledAt        int64
}

func (f Fire) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int64("sundial.execution.id", f.ExecutionID), attribute.Int64("sundial.job.id", f.JobID),
		attribute.String("sundial.job.name", f.Job), attribute.String("sundial.handler", f.Handler),
		attribute.String("sundial.target", f.Kind), attribute.Int("sundial.attempt", f.Attempt),
		attribute.Int64("sundial.scheduled_at", f.ScheduledAt),
	}
}

// StartFire starts a fire's root span at acquired, with its acquire span from acquired to
// claimed, and returns the context that carries the root.
func (t *Tracer) StartFire(ctx context.Context, f Fire, acquired, claimed time.Time) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	if acquired.IsZero() || acquired.After(claimed) {
		acquired = claimed // a fire this life did not acquire: started again after a wait
	}
	ctx, root := t.t.Start(ctx, SpanFire, trace.WithTimestamp(acquired), trace.WithAttributes(f.attrs()...),
		trace.WithNewRoot())
	_, acq := t.t.Start(ctx, SpanAcquire, trace.WithTimestamp(acquired))
	acq.End(trace.WithTimestamp(claimed))
	return ctx, root
}

// StartRun starts the span of the run itself: the handler in process, or the dispatch to an
// executor (a client span, whose context dispatch sends in the /run request).
func (t *Tracer) StartRun(ctx context.Context, remote bool) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	if remote {
		return t.t.Start(ctx, SpanDispatch, trace.WithSpanKind(trace.SpanKindClient))
	}
	return t.t.Start(ctx, SpanRun)
}

// End ends a span with the outcome: an error marks it failed. A nil span is ignored.
func End(span trace.Span, state string, err error, at time.Time) {
	if span == nil {
		return
	}
	if state != "" {
		span.SetAttributes(attribute.String("sundial.state", state))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(at))
}

// Complete records the write of a fire's result, from start to end, under parent (the root
// span of an in-process fire), or under the remote context traceparent names (an executor's
// result); with neither it records nothing.
func (t *Tracer) Complete(parent trace.Span, traceparent string, state string, start, end time.Time) {
	if t == nil {
		return
	}
	var ctx context.Context
	switch {
	case parent != nil:
		ctx = trace.ContextWithSpan(context.Background(), parent)
	case traceparent != "":
		ctx = Extract(context.Background(), traceparent)
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return
		}
	default:
		return
	}
	_, span := t.t.Start(ctx, SpanComplete, trace.WithTimestamp(start), trace.WithAttributes(attribute.String("sundial.state", state)))
	span.End(trace.WithTimestamp(end))
}

// Inject writes ctx's span context into an HTTP header (nothing when ctx has none).
func Inject(ctx context.Context, h propagation.HeaderCarrier) { Propagator.Inject(ctx, h) }

// Traceparent is ctx's span context as a W3C traceparent value ("" when it has none).
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Extract returns ctx carrying the remote span context a traceparent value names.
func Extract(ctx context.Context, traceparent string) context.Context {
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}
