package server

import (
	"slices"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRoutingEndToEnd fires jobs of every routing strategy at three real executors over real
// sockets, on every database, and checks where each run went and that its handler ran there.
func TestRoutingEndToEnd(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})
		a := c.addrs()
		// runs fires a fresh job of the strategy n times, one after the other.
		runs := func(routing string, n int) []string {
			t.Helper()
			job := c.job(routing, "ok", nil)
			var out []string
			for range n {
				out = append(out, c.runOnce(job))
			}
			return out
		}
		same := func(addr string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = addr
			}
			return out
		}

		t.Run("first", func(t *testing.T) {
			if got := runs("first", 3); !slices.Equal(got, same(a[0], 3)) {
				t.Fatalf("first ran on %v, want %s each time", got, a[0])
			}
		})
		t.Run("last", func(t *testing.T) {
			if got := runs("last", 3); !slices.Equal(got, same(a[2], 3)) {
				t.Fatalf("last ran on %v, want %s each time", got, a[2])
			}
		})
		t.Run("round_robin", func(t *testing.T) {
			if got := runs("round_robin", 4); !slices.Equal(got, []string{a[0], a[1], a[2], a[0]}) {
				t.Fatalf("round-robin ran on %v, want %v in turn", got, a)
			}
		})
		// Both "least" strategies go through every instance before one is used twice.
		for _, routing := range []string{"least_frequently_used", "least_recently_used"} {
			t.Run(routing, func(t *testing.T) {
				got := runs(routing, 3)
				if s := slices.Sorted(slices.Values(got)); !slices.Equal(s, a) {
					t.Fatalf("%s ran on %v, want each of %v once", routing, got, a)
				}
			})
		}
		t.Run("random", func(t *testing.T) {
			got := runs("random", 12)
			seen := map[string]bool{}
			for _, g := range got {
				if !slices.Contains(a, g) {
					t.Fatalf("random ran on %s, not one of %v", g, a)
				}
				seen[g] = true
			}
			// 12 runs on one instance happen with probability 3·3^-12: a stuck choice, not luck.
			if len(seen) < 2 {
				t.Fatalf("random ran all 12 runs on %v", got[0])
			}
		})
		t.Run("consistent_hash", func(t *testing.T) {
			got := runs("consistent_hash", 3)
			if got[1] != got[0] || got[2] != got[0] {
				t.Fatalf("consistent hash moved between runs: %v", got)
			}
		})
		t.Run("failover", func(t *testing.T) {
			job := c.job("failover", "ok", nil)
			if got := c.runOnce(job); got != a[0] {
				t.Fatalf("failover with all up ran on %s, want the first %s", got, a[0])
			}
			// The first instance still heartbeats (it is registered and listed) but its
			// endpoint does not answer: failover passes it over.
			c.nodes[0].gate.Down()
			defer c.nodes[0].gate.Up(c.nodes[0].gate.getTarget())
			id := c.fire(job)
			x := c.await(id, "succeeded", "failed")
			if x.State != "succeeded" || x.ExecutorAddress != a[1] {
				t.Fatalf("failover with %s down: %+v, want succeeded on %s", a[0], x, a[1])
			}
		})
		t.Run("busy_over", func(t *testing.T) {
			job := c.job("busy_over", "hold", nil)
			first := c.fire(job)
			if r := c.awaitStart(first); r.addr != a[0] {
				t.Fatalf("busy-over with all idle ran on %s, want %s", r.addr, a[0])
			}
			second := c.fire(job)
			if r := c.awaitStart(second); r.addr != a[1] {
				t.Fatalf("busy-over with %s busy ran on %s, want %s", a[0], r.addr, a[1])
			}
			c.release(job)
			for _, id := range []int64{first, second} {
				if x := c.await(id, "succeeded", "failed"); x.State != "succeeded" {
					t.Fatalf("held run %d: %+v", id, x)
				}
			}
		})
		t.Run("sharding_broadcast", func(t *testing.T) {
			job := c.job("sharding_broadcast", "ok", nil)
			c.fire(job)
			var xs []api.Execution
			eventually(t, "three shards to succeed", func() bool {
				xs = c.jobExecutions(job)
				n := 0
				for _, x := range xs {
					if x.State == "succeeded" {
						n++
					}
				}
				return n == 3
			})
			if len(xs) != 3 {
				t.Fatalf("%d executions, want one per instance: %+v", len(xs), xs)
			}
			for _, x := range xs {
				r, ok := c.rec(x.ID)
				if !ok || x.ShardTotal != 3 || x.ExecutorAddress != a[x.ShardIndex] || r.addr != a[x.ShardIndex] ||
					r.run.ShardIndex != x.ShardIndex || r.run.ShardTotal != 3 {
					t.Fatalf("shard %+v ran as %+v (%v); want shard i of 3 on instance i", x, r, ok)
				}
			}
		})
	})
}

// TestBroadcastShardRetry: a failed shard of a sharding-broadcast is retried alone, as the
// same shard (index and total kept) on the same instance; the broadcast is not repeated.
func TestBroadcastShardRetry(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		c := newCluster(t, dialect, clusterOpts{})
		a := c.addrs()
		job := c.job("sharding_broadcast", "fail-shard1-once", func(j *store.Job) { j.MaxRetries = 2; j.RetryBackoffMs = 10 })
		c.fire(job)
		var xs []api.Execution
		eventually(t, "the three shards and the retry of shard 1 to end", func() bool {
			xs = c.jobExecutions(job)
			done := 0
			for _, x := range xs {
				if x.State == "succeeded" || x.State == "failed" {
					done++
				}
			}
			return done == 4
		})
		if len(xs) != 4 {
			t.Fatalf("%d executions, want 3 shards and 1 retry: %+v", len(xs), xs)
		}
		var retry api.Execution
		for _, x := range xs {
			switch {
			case x.Attempt == 1:
				retry = x
			case x.ShardIndex == 1 && x.State != "failed", x.ShardIndex != 1 && x.State != "succeeded":
				t.Fatalf("shard %+v", x)
			}
		}
		r, _ := c.rec(retry.ID)
		if retry.State != "succeeded" || retry.ShardIndex != 1 || retry.ShardTotal != 3 || retry.ExecutorAddress != a[1] ||
			r.run.ShardIndex != 1 || r.run.ShardTotal != 3 || r.addr != a[1] {
			t.Fatalf("retry %+v ran as %+v; want shard 1/3 again on %s", retry, r, a[1])
		}
	})
}
