package dispatch

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// fakeProber answers beats from the addresses in alive and idle-beats from those in idle.
type fakeProber struct {
	alive, idle map[string]bool
	asked       []string
}

func (p *fakeProber) beat(_ context.Context, a string) error {
	p.asked = append(p.asked, a)
	if !p.alive[a] {
		return errors.New("connection refused")
	}
	return nil
}

func (p *fakeProber) idleBeat(_ context.Context, a string, _ int64) (bool, error) {
	p.asked = append(p.asked, a)
	if !p.alive[a] {
		return false, errors.New("connection refused")
	}
	return p.idle[a], nil
}

var addrs = []string{"http://a:1", "http://b:1", "http://c:1"}

// picks runs n picks of job 7 and returns the addresses chosen.
func picks(t *testing.T, r *router, st Strategy, n int, p prober) []string {
	t.Helper()
	var out []string
	for range n {
		a, err := r.pick(context.Background(), st, 7, addrs, p)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		out = append(out, a)
	}
	return out
}

func TestRoutingStrategies(t *testing.T) {
	a, b, c := addrs[0], addrs[1], addrs[2]
	for _, tc := range []struct {
		st   Strategy
		want []string
	}{
		{First, []string{a, a, a}},
		{"", []string{a, a, a}},
		{Last, []string{c, c, c}},
		{RoundRobin, []string{a, b, c, a}},
		// Every instance once before any twice, in address order on ties.
		{LFU, []string{a, b, c, a, b}},
		{LRU, []string{a, b, c, a, b}},
	} {
		if got := picks(t, newRouter(), tc.st, len(tc.want), nil); !slices.Equal(got, tc.want) {
			t.Errorf("%q picked %v, want %v", tc.st, got, tc.want)
		}
	}

	r := newRouter()
	r.intN = func(n int) int { return n - 2 } // the "random" source picks the second to last
	if got := picks(t, r, Random, 2, nil); !slices.Equal(got, []string{b, b}) {
		t.Errorf("random picked %v, want what its source says", got)
	}
}

// TestRoutingRoundRobinPerJob: each job rotates on its own.
func TestRoutingRoundRobinPerJob(t *testing.T) {
	r := newRouter()
	ctx := context.Background()
	first7, _ := r.pick(ctx, RoundRobin, 7, addrs, nil)
	first8, _ := r.pick(ctx, RoundRobin, 8, addrs, nil)
	second7, _ := r.pick(ctx, RoundRobin, 7, addrs, nil)
	if first7 != addrs[0] || first8 != addrs[0] || second7 != addrs[1] {
		t.Errorf("round robin per job: %s %s %s", first7, first8, second7)
	}
}

func TestRoutingLRUAfterAMix(t *testing.T) {
	r := newRouter()
	ctx := context.Background()
	// With only a and b known, both are used; then c joins and is the least recently used.
	r.pick(ctx, LRU, 7, addrs[:2], nil)
	r.pick(ctx, LRU, 7, addrs[:2], nil)
	if got, _ := r.pick(ctx, LRU, 7, addrs, nil); got != addrs[2] {
		t.Errorf("LRU picked %s, want the never used %s", got, addrs[2])
	}
	if got, _ := r.pick(ctx, LRU, 7, addrs, nil); got != addrs[0] {
		t.Errorf("LRU picked %s, want the oldest used %s", got, addrs[0])
	}
}

func TestRoutingConsistentHash(t *testing.T) {
	ctx := context.Background()
	r := newRouter()
	owner := map[int64]string{}
	spread := map[string]int{}
	for job := int64(1); job <= 300; job++ {
		a, _ := r.pick(ctx, ConsistentHash, job, addrs, nil)
		again, _ := r.pick(ctx, ConsistentHash, job, addrs, nil)
		if a != again {
			t.Fatalf("job %d moved from %s to %s with the same instances", job, a, again)
		}
		owner[job] = a
		spread[a]++
	}
	for _, a := range addrs {
		if spread[a] < 50 {
			t.Errorf("instance %s owns %d of 300 jobs: the ring is lopsided (%v)", a, spread[a], spread)
		}
	}
	// c leaves: only c's jobs move.
	for job, was := range owner {
		now := consistentHash(job, addrs[:2])
		if was != addrs[2] && now != was {
			t.Fatalf("job %d moved from %s to %s when another instance left", job, was, now)
		}
	}
}

func TestRoutingFailoverAndBusyOver(t *testing.T) {
	ctx := context.Background()
	a, b, c := addrs[0], addrs[1], addrs[2]
	p := &fakeProber{alive: map[string]bool{b: true, c: true}, idle: map[string]bool{c: true}}
	if got, err := newRouter().pick(ctx, Failover, 7, addrs, p); err != nil || got != b {
		t.Errorf("failover picked %s (%v), want the first that answers a beat, %s", got, err, b)
	}
	if !slices.Equal(p.asked, []string{a, b}) {
		t.Errorf("failover asked %v, want a then b", p.asked)
	}
	if got, err := newRouter().pick(ctx, BusyOver, 7, addrs, p); err != nil || got != c {
		t.Errorf("busy-over picked %s (%v), want the first idle, %s", got, err, c)
	}
	none := &fakeProber{}
	if _, err := newRouter().pick(ctx, Failover, 7, addrs, none); err == nil {
		t.Error("failover with no instance answering picked one")
	}
	p.idle = nil
	if _, err := newRouter().pick(ctx, BusyOver, 7, addrs, p); err == nil {
		t.Error("busy-over with every instance busy picked one")
	}
}

func TestParseStrategy(t *testing.T) {
	for in, want := range map[string]Strategy{"": First, "round_robin": RoundRobin, "SHARDING_BROADCAST": ShardingBroadcast, "BUSYOVER": BusyOver} {
		if got, err := ParseStrategy(in); err != nil || got != want {
			t.Errorf("ParseStrategy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseStrategy("nearest"); err == nil {
		t.Error("ParseStrategy accepted an unknown strategy")
	}
}
