package executor

import (
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
)

// TestEndedRunsForgotten: a finished run is remembered against a repeated /run for
// endedMemory and forgotten after, at the next run's end; under a steady rate the memory
// holds endedMemory's worth of runs, and its order list does not grow past it.
func TestEndedRunsForgotten(t *testing.T) {
	clk := clock.NewFake(time.Now())
	e, err := New(Config{Server: "http://127.0.0.1:1", Token: "t", App: "a", Clock: clk, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	remember := func(id int64) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.rememberEnded(id)
	}
	for id := int64(1); id <= 3; id++ {
		remember(id)
	}
	clk.Advance(endedMemory / 2)
	remember(4)
	if len(e.ended) != 4 {
		t.Fatalf("%d runs remembered within endedMemory, want 4", len(e.ended))
	}
	clk.Advance(endedMemory/2 + time.Second)
	remember(5)
	if _, kept := e.ended[1]; kept || len(e.ended) != 2 {
		t.Fatalf("after endedMemory: %d runs remembered (run 1 kept: %v), want runs 4 and 5", len(e.ended), kept)
	}

	// A run a second for three times endedMemory: endedMemory's worth stays, no more.
	perMemory := int(endedMemory / time.Second)
	for i := range 3 * perMemory {
		clk.Advance(time.Second)
		remember(int64(100 + i))
	}
	if n := len(e.ended); n < perMemory || n > perMemory+1 {
		t.Fatalf("%d runs remembered at a run a second, want endedMemory's worth (%d)", n, perMemory)
	}
	if n := len(e.endedOrder) - e.endedHead; n != len(e.ended) {
		t.Fatalf("the order list holds %d live entries for %d remembered runs", n, len(e.ended))
	}
	if len(e.endedOrder) > 2*perMemory+1024 {
		t.Fatalf("the order list grew to %d entries for %d remembered runs", len(e.endedOrder), len(e.ended))
	}
}
