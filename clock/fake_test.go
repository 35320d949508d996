package clock

import (
	"testing"
	"time"
)

func TestFakeTimersFireInOrderOnAdvance(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	late := f.NewTimer(2 * time.Second)
	early := f.NewTimer(time.Second)
	stopped := f.NewTimer(time.Second)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop reported true")
	}

	f.Advance(1500 * time.Millisecond)
	select {
	case got := <-early.C():
		if want := start.Add(time.Second); !got.Equal(want) {
			t.Errorf("early fired with %v, want %v", got, want)
		}
	default:
		t.Fatal("early timer did not fire")
	}
	select {
	case <-late.C():
		t.Fatal("late timer fired 0.5 s early")
	default:
	}
	if f.Pending() != 1 {
		t.Fatalf("Pending = %d, want 1", f.Pending())
	}
	late.Reset(time.Second) // now due at 2.5 s
	f.Advance(time.Second)
	select {
	case got := <-late.C():
		if want := start.Add(2500 * time.Millisecond); !got.Equal(want) {
			t.Errorf("late fired with %v, want %v", got, want)
		}
	default:
		t.Fatal("reset timer did not fire")
	}
	select {
	case <-stopped.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if got, want := f.Now(), start.Add(2500*time.Millisecond); !got.Equal(want) {
		t.Errorf("Now = %v, want %v", got, want)
	}
}

func TestFakeWaitForTimers(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	done := make(chan struct{})
	go func() { f.NewTimer(time.Minute) }()
	if !f.WaitForTimers(1, done) {
		t.Fatal("WaitForTimers returned false")
	}
	close(done)
	if f.WaitForTimers(2, done) {
		t.Fatal("WaitForTimers(2) returned true with one timer and done closed")
	}
}

func TestFakeTimerAt(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	past := f.NewTimerAt(start.Add(-time.Second))
	select {
	case <-past.C():
	default:
		t.Fatal("a timer for a passed deadline did not fire at once")
	}
	later := f.NewTimerAt(start.Add(time.Second))
	f.Advance(999 * time.Millisecond)
	select {
	case <-later.C():
		t.Fatal("fired a millisecond early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case got := <-later.C():
		if !got.Equal(start.Add(time.Second)) {
			t.Errorf("fired with %v", got)
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
}
