package backoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
)

func TestDelay(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		n    int
		want time.Duration
	}{
		{Policy{Initial: time.Second}, 0, time.Second},
		{Policy{Initial: time.Second}, 3, 8 * time.Second},
		{Policy{Initial: time.Second, Max: 5 * time.Second}, 3, 5 * time.Second},
		{Policy{Initial: 100 * time.Millisecond, Factor: 4}, 1, 400 * time.Millisecond},
		{Policy{Initial: time.Hour, Max: time.Hour}, 1000, time.Hour},
		{Policy{Initial: time.Second}, 1000, maxDuration}, // no cap: saturates, never overflows
		{Policy{}, 5, 0},
	} {
		if got := c.p.Delay(c.n); got != c.want {
			t.Errorf("%+v.Delay(%d) = %v, want %v", c.p, c.n, got, c.want)
		}
	}
}

func TestJitterStaysInRange(t *testing.T) {
	p := Policy{Initial: time.Second, Jitter: 0.25}
	varied := false
	for range 200 {
		d := p.Delay(0)
		if d < 750*time.Millisecond || d > time.Second {
			t.Fatalf("Delay = %v, want within [750ms, 1s]", d)
		}
		varied = varied || d != time.Second
	}
	if !varied {
		t.Error("200 jittered delays were all the full delay")
	}
}

func TestSequence(t *testing.T) {
	s := Sequence{Policy: Policy{Initial: 200 * time.Millisecond, Max: 500 * time.Millisecond}}
	var got []time.Duration
	for range 4 {
		got = append(got, s.Next())
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	s.Reset()
	if d := s.Next(); d != 200*time.Millisecond {
		t.Errorf("after Reset: %v, want 200ms", d)
	}
}

// retryAsync runs Retry on its own goroutine and returns the channel of its result.
func retryAsync(ctx context.Context, clk clock.Clock, p Policy, attempts int, f func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Retry(ctx, clk, p, attempts, f) }()
	return done
}

// TestRetryWaitsOnTheClock: the pauses are the policy's, on the injected clock; Retry gives
// up after its attempts with the last error.
func TestRetryWaitsOnTheClock(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	start := clk.Now()
	var at []time.Duration
	boom := errors.New("boom")
	done := retryAsync(context.Background(), clk, Policy{Initial: time.Second}, 3, func(context.Context) error {
		at = append(at, clk.Now().Sub(start))
		return boom
	})
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		clk.WaitForTimers(1, nil)
		clk.Advance(d)
	}
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Retry = %v, want boom", err)
	}
	if want := []time.Duration{0, time.Second, 3 * time.Second}; len(at) != 3 || at[1] != want[1] || at[2] != want[2] {
		t.Errorf("attempts at %v, want %v", at, want)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left pending", clk.Pending())
	}
}

func TestRetryStopsAtSuccessAndPermanent(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	calls := 0
	done := retryAsync(context.Background(), clk, Policy{Initial: time.Second}, 0, func(context.Context) error {
		calls++
		if calls < 2 {
			return errors.New("transient")
		}
		return nil
	})
	clk.WaitForTimers(1, nil)
	clk.Advance(time.Second)
	if err := <-done; err != nil || calls != 2 {
		t.Fatalf("Retry = %v after %d calls, want success after 2", err, calls)
	}

	refused := errors.New("refused")
	calls = 0
	err := Retry(context.Background(), clk, Policy{Initial: time.Second}, 0, func(context.Context) error {
		calls++
		return Permanent(refused)
	})
	if err != refused || calls != 1 {
		t.Errorf("Retry = %v after %d calls, want refused unwrapped after 1", err, calls)
	}
}

// TestRetryEndsWithItsContext: a cancel during a pause ends the retry at once, with the last
// error and the context's.
func TestRetryEndsWithItsContext(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	boom := errors.New("boom")
	done := retryAsync(ctx, clk, Policy{Initial: time.Hour}, 0, func(context.Context) error { return boom })
	clk.WaitForTimers(1, nil)
	cancel()
	err := <-done
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry = %v, want boom and canceled", err)
	}
	if clk.Pending() != 0 {
		t.Errorf("%d timers left pending", clk.Pending())
	}
}

// BenchmarkRetrySucceeds is Retry whose first attempt succeeds, as nearly every dispatch's
// record does: it allocates nothing.
func BenchmarkRetrySucceeds(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := Retry(ctx, clock.Real{}, Policy{Initial: time.Millisecond}, 3, func(context.Context) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRetrySucceedsWithoutAllocating: a first attempt that succeeds costs no allocation
// (the dispatch path makes three such calls per run).
func TestRetrySucceedsWithoutAllocating(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { _ = Retry(ctx, clock.Real{}, Policy{Initial: time.Millisecond}, 3, ok) }); n != 0 {
		t.Fatalf("Retry allocated %v times for an attempt that succeeded, want 0", n)
	}
}
