// Package clock is the time source of every long-running part of Sundial. The engine, its
// maintenance services and the executors read the time and wait only through a Clock, so their
// tests run on a Fake clock, deterministic and without sleeps.
package clock

import "time"

// Clock reads the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d has passed.
	NewTimer(d time.Duration) Timer
	// NewTimerAt returns a timer that fires at deadline (at once if it has passed). Waiting
	// for an instant this way cannot race with the clock moving between reading it and
	// setting a relative timer.
	NewTimerAt(deadline time.Time) Timer
}

// Timer is the part of *time.Timer that Sundial uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped a pending timer.
	Stop() bool
	// Reset makes the timer fire after d, whether or not it had fired.
	Reset(d time.Duration)
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a timer of the time package.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTimerAt returns a timer of the time package that fires at deadline.
func (Real) NewTimerAt(deadline time.Time) Timer {
	return realTimer{time.NewTimer(time.Until(deadline))}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
