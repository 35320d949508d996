package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestReacquiredFireStartsOnce hands a node's acquired fire back to pending behind its back
// (the leader's recovery of a node it took for dead, which keeps the execution's id) and lets
// the node acquire it again: the node then holds the fire twice, and must start it once.
// A replace job's copy must not cancel the run either.
func TestReacquiredFireStartsOnce(t *testing.T) {
	for _, policy := range []store.ConcurrencyPolicy{store.ConcurrencyAllow, store.ConcurrencyReplace} {
		t.Run(string(policy), func(t *testing.T) {
			eachDialect(t, func(t *testing.T, dialect string) { testReacquiredFireStartsOnce(t, dialect, policy) })
		})
	}
}

func testReacquiredFireStartsOnce(t *testing.T, dialect string, policy store.ConcurrencyPolicy) {
	n := newFakeNode(t, dialect, nil)
	ctx := context.Background()
	job := insertJob(t, n.st, "job", func(j *store.Job) { j.Concurrency = policy })
	insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
	n.start()
	acquiredOnce := func() {
		t.Helper()
		for got := 0; got == 0; {
			got = waitFor(t, "an acquisition", n.e.signals.acquired, 1)[0]
		}
	}
	n.advance(900 * time.Millisecond) // within LookAhead of the fire, before StartLead
	acquiredOnce()
	if back, err := n.st.ExecutionsReleaseAcquired(ctx, lifeOf(n.e)); err != nil || back != 1 {
		t.Fatalf("release the node's acquired fire: %d, %v", back, err)
	}
	n.e.Wake()
	acquiredOnce()
	n.advance(200 * time.Millisecond)
	n.completed(1)
	if err := n.e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	n.rec.mu.Lock()
	defer n.rec.mu.Unlock()
	if len(n.rec.execs) != 1 {
		for _, x := range n.rec.execs {
			t.Logf("started execution %d (%s)", x.ID, time.UnixMilli(x.ScheduledAt).UTC().Format("15:04:05.000"))
		}
		t.Fatalf("the fire started %d times, want once", len(n.rec.execs))
	}
	if got := states(n.executions(job)); len(got) != 1 || got[0] != store.ExecSucceeded {
		t.Fatalf("executions %v, want the one fire succeeded", got)
	}
}
