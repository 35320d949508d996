package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a clock that moves only when a test calls Advance or Set. Its timers fire during
// those calls, in time order. Tests synchronise with the code under test through
// WaitForTimers rather than sleeping.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of pending timers changes
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now + d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, ch: make(chan time.Time, 1)}
	f.scheduleLocked(t, d)
	return t
}

// NewTimerAt returns a timer that fires when the fake time reaches deadline, at once if it
// already has.
func (f *Fake) NewTimerAt(deadline time.Time) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, ch: make(chan time.Time, 1)}
	if !deadline.After(f.now) {
		t.ch <- f.now
		return t
	}
	f.scheduleLocked(t, deadline.Sub(f.now))
	return t
}

// Advance moves the time forward by d, firing every timer that comes due on the way.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now().Add(d)) }

// Set moves the time to t (never backwards), firing every timer due by then.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	sort.Slice(f.timers, func(i, j int) bool { return f.timers[i].when.Before(f.timers[j].when) })
	for len(f.timers) > 0 && !f.timers[0].when.After(t) {
		ft := f.timers[0]
		f.timers = f.timers[1:]
		f.now = ft.when
		ft.pending = false
		select {
		case ft.ch <- ft.when:
		default: // like time.Timer, an unread fire is not queued twice
		}
	}
	f.now = t
	f.signalLocked()
}

// Pending returns how many timers are waiting to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitForTimers blocks until at least n timers are pending, i.e. until the code under test
// has gone to sleep on the clock. It returns false if done is closed first.
func (f *Fake) WaitForTimers(n int, done <-chan struct{}) bool {
	for {
		f.mu.Lock()
		pending, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if pending >= n {
			return true
		}
		select {
		case <-changed:
		case <-done:
			return false
		}
	}
}

func (f *Fake) scheduleLocked(t *fakeTimer, d time.Duration) {
	t.when = f.now.Add(d)
	if !t.pending {
		t.pending = true
		f.timers = append(f.timers, t)
	}
	f.signalLocked()
}

func (f *Fake) removeLocked(t *fakeTimer) bool {
	if !t.pending {
		return false
	}
	t.pending = false
	for i, ft := range f.timers {
		if ft == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			break
		}
	}
	f.signalLocked()
	return true
}

func (f *Fake) signalLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	clock   *Fake
	ch      chan time.Time
	when    time.Time
	pending bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.removeLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.clock.scheduleLocked(t, d)
}
