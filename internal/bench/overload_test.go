package bench

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/testdb"
)

// TestOverloadScenario runs the overload scenario end to end with a tiny capacity (two
// handler slots, each fire's handler working 50 ms) on every database, and checks that its
// report comes from what ran: a measured capacity, per-second windows that add up to the
// fires started, timed heartbeat writes, and a drain that ended. Timing targets are the
// benchmark's to measure, not this test's; the guarantees at this load are asserted.
func TestOverloadScenario(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			opts := Options{DSN: testdb.DSN(t, dialect), Logger: log, Work: 50 * time.Millisecond,
				// Heartbeats often, to time many; a node timeout long enough that a machine
				// loaded by other tests does not lapse the fence (TestBeatSummary checks how
				// lapses are counted).
				Engine: engine.Config{MaxRunning: 2, HeartbeatInterval: 200 * time.Millisecond, NodeTimeout: time.Minute}}
			r, err := Overload(context.Background(), opts, OverloadConfig{RampFrom: 10, RampStep: time.Second, RampHold: time.Second, Duration: 2 * time.Second, MaxDrain: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r)
			o := r.Overload
			if o == nil || o.Capacity <= 0 {
				t.Fatalf("no capacity measured: %+v", r)
			}
			// Two handler slots of 50 ms: at most 40 fires a second, whatever the machine.
			if o.Capacity > 45 {
				t.Errorf("capacity %.1f/s, above the 40/s two 50 ms slots allow", o.Capacity)
			}
			// The ramp stops at the first step the nodes fell behind in, and the capacity is
			// what they fired through that demand held.
			n := len(o.Ramp)
			if n < 2 || o.Ramp[n-1].Achieved >= 0.9*o.Ramp[n-1].Demanded || o.Ramp[n-2].Achieved < 0.9*o.Ramp[n-2].Demanded {
				t.Errorf("ramp %+v: want steps that kept up, then one that fell behind", o.Ramp)
			}
			if o.Hold == nil || o.Hold.Demanded != o.Ramp[n-1].Demanded || o.Capacity != o.Hold.Achieved {
				t.Errorf("hold %+v after the ramp %+v, capacity %.1f/s: want the last step's demand held, and what it fired the capacity", o.Hold, o.Ramp, o.Capacity)
			}
			if want := float64(r.Triggers); r.Demanded != want || r.Triggers < int(2*o.Capacity) {
				t.Errorf("demanded %.1f/s of %d triggers for a capacity of %.1f/s, want twice it", r.Demanded, r.Triggers, o.Capacity)
			}
			sum, least := 0, o.Windows[0]
			for _, w := range o.Windows {
				sum += w
				least = min(least, w)
			}
			if len(o.Windows) != 2 || sum != r.Fires || o.Windows[0] == 0 || o.MinWindow != least {
				t.Errorf("windows %v (min %d), %d fires", o.Windows, o.MinWindow, r.Fires)
			}
			if o.HeartbeatWrites == 0 || o.HeartbeatP99 <= 0 || o.HeartbeatMax < o.HeartbeatP99 {
				t.Errorf("heartbeat writes %d, p99 %s, max %s", o.HeartbeatWrites, o.HeartbeatP99, o.HeartbeatMax)
			}
			if !o.Drained || o.Drain <= 0 {
				t.Errorf("drain %s, drained %v: twice the capacity leaves a backlog to drain", o.Drain, o.Drained)
			}
			if o.LeadershipChanges != 0 || o.FenceLapses != 0 || r.Duplicates != 0 {
				t.Errorf("%d leadership changes, %d fence lapses, %d duplicates", o.LeadershipChanges, o.FenceLapses, r.Duplicates)
			}
		})
	}
}

// TestBeatSummary checks how the heartbeat log is read: durations of the writes in the
// span, and a fence lapse for each gap between a node's successful beats longer than the
// node timeout, and for a node silent at the end.
func TestBeatSummary(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	l := &beatLog{beats: []beat{
		{node: "a", sent: at(-1), took: time.Hour, succeed: true}, // before the span
		{node: "a", sent: at(1), took: 10 * time.Millisecond, succeed: true},
		{node: "b", sent: at(1), took: 20 * time.Millisecond, succeed: true},
		{node: "a", sent: at(2), took: 3 * time.Second, succeed: false},
		{node: "a", sent: at(8), took: 30 * time.Millisecond, succeed: true}, // 7 s after a's last: a lapse
		{node: "b", sent: at(5), took: 40 * time.Millisecond, succeed: true},
	}}
	n, p99, longest, lapses := l.summary(t0, at(10), 5*time.Second)
	if n != 5 || p99 != 3*time.Second || longest != 3*time.Second {
		t.Errorf("writes %d p99 %s max %s, want 5, 3s, 3s", n, p99, longest)
	}
	// a: 1 → 8 (7 s); b: silent from 5 to the end at 10 (5 s, not more): one lapse.
	if lapses != 1 {
		t.Errorf("lapses %d, want 1", lapses)
	}
	if _, _, _, lapses := l.summary(t0, at(11), 5*time.Second); lapses != 2 {
		t.Errorf("lapses to 11 s: %d, want 2 (b silent for 6 s at the end)", lapses)
	}
}

// TestClimbOverBlip checks the capacity ramp's rule on scripted steps: a short step that
// fell behind while the held demand kept up is a blip and the ramp goes on; the capacity is
// what a held demand the nodes fell behind on fired.
func TestClimbOverBlip(t *testing.T) {
	// What the nodes fire at each demand: a short step at 2,000/s falls behind once (a
	// checkpoint); they sustain up to 6,000/s.
	blipped := false
	run := func(rate float64, warmup, d time.Duration) (RampStep, error) {
		fired := min(rate, 6000)
		if rate == 2000 && d == time.Second && !blipped {
			blipped, fired = true, 1600
		}
		return RampStep{Demanded: rate, Achieved: fired}, nil
	}
	capacity, ramp, hold, err := climb(1000, time.Second, 10*time.Second, run)
	if err != nil {
		t.Fatal(err)
	}
	want := []RampStep{{1000, 1000}, {2000, 1600}, {2000, 2000}, {4000, 4000}, {8000, 6000}}
	if len(ramp) != len(want) {
		t.Fatalf("ramp %v, want %v", ramp, want)
	}
	for i := range want {
		if ramp[i] != want[i] {
			t.Fatalf("ramp %v, want %v", ramp, want)
		}
	}
	if capacity != 6000 || hold == nil || *hold != (RampStep{8000, 6000}) {
		t.Errorf("capacity %.0f held at %+v, want 6000 held at 8000/s", capacity, hold)
	}
}
