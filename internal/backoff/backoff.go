// Package backoff owns Sundial's one rule for pausing between attempts: an exponential
// delay with a cap and optional jitter, and a retry loop that waits on an injected
// clock.Clock and gives up when its context ends. Every retry in the engine, the alarm
// delivery, the dispatcher and the executor SDK takes its pauses from here.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
)

// Policy is an exponential backoff: Initial, then Initial×Factor, Initial×Factor², … up to
// Max.
type Policy struct {
	// Initial is the first delay. Zero makes every delay zero.
	Initial time.Duration
	// Max caps the delay; zero means no cap.
	Max time.Duration
	// Factor multiplies the delay after each attempt. Zero means 2.
	Factor float64
	// Jitter is the fraction of each delay drawn at random, in [0, 1]: 0.2 makes a delay d
	// anything between 0.8d and d, so many clients failing together do not retry together.
	Jitter float64
}

// Delay returns the pause after the n-th failed attempt, counting from 0.
func (p Policy) Delay(n int) time.Duration {
	factor := p.Factor
	if factor <= 0 {
		factor = 2
	}
	d := float64(p.Initial)
	for i := 0; i < n && (p.Max <= 0 || d < float64(p.Max)); i++ {
		d *= factor
	}
	out := maxDuration // float64(maxDuration) rounds up to 2⁶³, which overflows back
	if d < float64(maxDuration) {
		out = time.Duration(d)
	}
	if p.Max > 0 && out > p.Max {
		out = p.Max
	}
	if p.Jitter > 0 && out > 0 {
		out -= time.Duration(rand.Float64() * min(p.Jitter, 1) * float64(out))
	}
	return out
}

const maxDuration = time.Duration(1<<63 - 1)

// Sequence hands out a policy's delays one after another, for loops that retry on their own
// schedule (a reporter woken by new work as well as by its retry timer).
type Sequence struct {
	Policy
	n int
}

// Next returns the next delay.
func (s *Sequence) Next() time.Duration {
	d := s.Delay(s.n)
	s.n++
	return d
}

// Reset starts the sequence over, after a success.
func (s *Sequence) Reset() { s.n = 0 }

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that Retry returns it at once instead of trying again.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// Retry calls f until it returns nil or a Permanent error, attempts calls have failed
// (attempts <= 0: no limit), or ctx ends, pausing p's delays on clk in between. It returns
// nil, f's last error (a Permanent one unwrapped), or that error joined with ctx's.
func Retry(ctx context.Context, clk clock.Clock, p Policy, attempts int, f func(ctx context.Context) error) error {
	for n := 0; ; n++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		// Declared past the success, which is nearly every call: errors.As moves it to the
		// heap, and on the dispatch path that was 3 % of a remote fire's CPU.
		var perm permanent
		switch {
		case errors.As(err, &perm):
			return perm.err
		case attempts > 0 && n+1 >= attempts:
			return err
		}
		if ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		if !Wait(ctx, clk, p.Delay(n)) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// Wait pauses for d on clk; it reports false when ctx ends first.
func Wait(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
