package startstop

import (
	"context"
	"sync"
	"testing"
)

type ctxKey struct{}

// TestStartStop: Start runs once until Stop, keeps the values but not the cancellation of
// its context, and Stop waits for the run to end, is idempotent and safe when never started.
func TestStartStop(t *testing.T) {
	var b Base
	b.Stop() // never started

	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	entered, ended := make(chan string, 2), make(chan struct{})
	run := func(ctx context.Context) {
		entered <- ctx.Value(ctxKey{}).(string)
		<-ctx.Done()
		close(ended)
	}
	if !b.StartFunc(ctx, run) {
		t.Fatal("first Start did not start")
	}
	if b.StartFunc(ctx, run) {
		t.Fatal("second Start started another run")
	}
	if v := <-entered; v != "v" {
		t.Errorf("run's context value %q, want v", v)
	}
	cancel() // the caller's context ending must not stop the service
	if !b.Running() {
		t.Fatal("not running after its starter's context ended")
	}

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Stop()
			select {
			case <-ended:
			default:
				t.Error("Stop returned before the run ended")
			}
		}()
	}
	wg.Wait()
	if b.Running() {
		t.Error("running after Stop")
	}
	if !b.StartFunc(context.Background(), func(ctx context.Context) { <-ctx.Done() }) {
		t.Error("no restart after Stop")
	}
	b.Stop()
}
