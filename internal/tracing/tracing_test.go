package tracing

import (
	"context"
	"testing"
	"time"
)

// TestNilTracerIsOff: every call on the nil Tracer (tracing off) does nothing and leaves the
// context without a span.
func TestNilTracerIsOff(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	fctx, root := tr.StartFire(ctx, Fire{}, time.Now(), time.Now())
	rctx, run := tr.StartRun(fctx, true)
	tr.Complete(root, "", "succeeded", time.Now(), time.Now())
	End(run, "", nil, time.Now())
	End(root, "", nil, time.Now())
	if root != nil || run != nil || fctx != ctx || rctx != ctx || Traceparent(rctx) != "" {
		t.Fatal("the nil Tracer made a span")
	}
}
