package streamconn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// framesPeer is a running peer with the given gap on a fake clock, whose frames arrive on
// frames, each with a token on wrote.
type framesPeer struct {
	*Peer
	clk    *clock.Fake
	frames chan wire.StreamFrame
	wrote  chan struct{}
}

func newFramesPeer(t *testing.T, gap time.Duration) *framesPeer {
	t.Helper()
	frames, wrote := make(chan wire.StreamFrame, 16), make(chan struct{}, 16)
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p := New(Config{Gap: gap, Clock: clk, Write: func(_ context.Context, b []byte) error {
		var f wire.StreamFrame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Errorf("a frame that is not JSON: %v", err)
		}
		frames <- f
		wrote <- struct{}{}
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &framesPeer{Peer: p, clk: clk, frames: frames, wrote: wrote}
}

// next is the next frame written; the real-time bound only keeps a broken peer from hanging
// the test.
func (p *framesPeer) next(t *testing.T) wire.StreamFrame {
	t.Helper()
	select {
	case f := <-p.frames:
		<-p.wrote
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame written")
		return wire.StreamFrame{}
	}
}

func replyIDs(f wire.StreamFrame) []uint64 {
	var ids []uint64
	for _, r := range f.Replies {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestGapBatchesABusyStream: an idle stream writes at once; what is queued within the gap of
// the last frame waits for the gap and goes in one frame.
func TestGapBatchesABusyStream(t *testing.T) {
	const gap = 10 * time.Millisecond
	p := newFramesPeer(t, gap)

	p.Reply(wire.StreamReply{ID: 1})
	if got := replyIDs(p.next(t)); len(got) != 1 || got[0] != 1 {
		t.Fatalf("first frame replies %v, want [1] at once", got)
	}

	p.Reply(wire.StreamReply{ID: 2})
	p.Reply(wire.StreamReply{ID: 3})
	if !p.clk.WaitForTimers(1, p.wrote) {
		t.Fatalf("frame %v written within the gap of the last", replyIDs(<-p.frames))
	}
	clk := p.clk
	clk.Advance(gap)
	if got := replyIDs(p.next(t)); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("frame after the gap has replies %v, want [2 3] together", got)
	}

	clk.Advance(3 * gap) // the stream idles
	p.Reply(wire.StreamReply{ID: 4})
	if got := replyIDs(p.next(t)); len(got) != 1 || got[0] != 4 {
		t.Fatalf("frame after an idle gap has replies %v, want [4] at once", got)
	}
}

// TestGapYieldsToAFullFrame: a full frame's worth of calls queued within the gap is written
// without waiting for it.
func TestGapYieldsToAFullFrame(t *testing.T) {
	p := newFramesPeer(t, time.Hour)
	p.Reply(wire.StreamReply{ID: 1})
	p.next(t)

	p.mu.Lock()
	for i := range maxFrameCalls {
		p.calls = append(p.calls, wire.StreamCall{ID: uint64(i + 1), Path: wire.PathRun, Body: wire.RawJSON("{}")})
	}
	p.mu.Unlock()
	p.signal()
	f := p.next(t)
	var calls []wire.StreamCall
	if err := json.Unmarshal([]byte(f.Calls), &calls); err != nil {
		t.Fatal(err)
	}
	if len(calls) != maxFrameCalls {
		t.Fatalf("frame of %d calls, want %d written within the gap", len(calls), maxFrameCalls)
	}
}

// TestCallNotSent: a call that ends while still queued (its stream closed, its context ended
// before any frame carried it) says so (ErrNotSent) and leaves the queue, so no later frame
// carries it; one that a frame carried does not: the other side may have served it.
func TestCallNotSent(t *testing.T) {
	idle := New(Config{Write: func(context.Context, []byte) error { return nil }}) // no Run: nothing is written
	ended := make(chan error, 2)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, err := idle.Call(ctx, wire.PathRun, []byte("{}")); ended <- err }()
	go func() { _, err := idle.Call(context.Background(), wire.PathRun, []byte("{}")); ended <- err }()
	for queued := 0; queued < 2; {
		idle.mu.Lock()
		queued = len(idle.calls)
		idle.mu.Unlock()
	}
	cancel()
	if err := <-ended; !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a queued call whose context ended: %v, want ErrNotSent and the context's error", err)
	}
	idle.Close(errors.New("gone"))
	if err := <-ended; !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrClosed) {
		t.Fatalf("a queued call on a stream that closed: %v, want ErrNotSent and ErrClosed", err)
	}
	if len(idle.calls) != 0 {
		t.Fatalf("%d calls still queued, want none", len(idle.calls))
	}

	p := newFramesPeer(t, 0)
	go func() { _, err := p.Call(context.Background(), wire.PathRun, []byte("{}")); ended <- err }()
	p.next(t) // the call went out
	p.Close(errors.New("gone"))
	if err := <-ended; !errors.Is(err, ErrClosed) || errors.Is(err, ErrNotSent) {
		t.Fatalf("a sent call on a stream that closed: %v, want ErrClosed only", err)
	}
}
