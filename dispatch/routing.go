package dispatch

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// Strategy names a routing strategy: how the instance that runs a fire is picked among an
// app's addresses (XXL-JOB's ExecutorRouteStrategy).
type Strategy string

// The routing strategies. Job.Routing holds one of these; empty means First.
const (
	First          Strategy = "first"
	Last           Strategy = "last"
	RoundRobin     Strategy = "round_robin"
	Random         Strategy = "random"
	ConsistentHash Strategy = "consistent_hash"
	// LFU picks the instance this job used least often.
	LFU Strategy = "least_frequently_used"
	// LRU picks the instance this job used least recently.
	LRU Strategy = "least_recently_used"
	// Failover picks the first instance that answers a beat.
	Failover Strategy = "failover"
	// BusyOver picks the first instance that answers an idle-beat with idle.
	BusyOver Strategy = "busy_over"
	// ShardingBroadcast runs the fire on every instance, each told its shard index and total.
	ShardingBroadcast Strategy = "sharding_broadcast"
)

// Strategies lists every strategy, for validation and documentation.
var Strategies = []Strategy{First, Last, RoundRobin, Random, ConsistentHash, LFU, LRU, Failover, BusyOver, ShardingBroadcast}

// ParseStrategy accepts a strategy name; "" is First. XXL-JOB's upper-case names
// (ROUND, SHARDING_BROADCAST, ...) are accepted too, so imported jobs keep their routing.
func ParseStrategy(s string) (Strategy, error) {
	if s == "" {
		return First, nil
	}
	if slices.Contains(Strategies, Strategy(s)) {
		return Strategy(s), nil
	}
	xxl := map[string]Strategy{"FIRST": First, "LAST": Last, "ROUND": RoundRobin, "RANDOM": Random,
		"CONSISTENT_HASH": ConsistentHash, "LEAST_FREQUENTLY_USED": LFU, "LEAST_RECENTLY_USED": LRU,
		"FAILOVER": Failover, "BUSYOVER": BusyOver, "SHARDING_BROADCAST": ShardingBroadcast}
	if st, ok := xxl[s]; ok {
		return st, nil
	}
	return "", fmt.Errorf("routing strategy %q: want one of %v", s, Strategies)
}

// prober asks an instance whether it is alive (beat) or idle for a job (idle-beat).
type prober interface {
	beat(ctx context.Context, address string) error
	idleBeat(ctx context.Context, address string, jobID int64) (bool, error)
}

// router keeps the per-job memory of the stateful strategies (round-robin position, use
// counts, last use). The memory is per node and in memory, as in XXL-JOB: after a restart or
// on another node the rotation starts afresh, which only shifts the order.
type router struct {
	mu    sync.Mutex
	next  map[int64]int
	uses  map[int64]map[string]int
	used  map[int64]map[string]uint64
	clock uint64
	// intN is the random source; tests make it deterministic.
	intN func(n int) int
}

func newRouter() *router {
	return &router{next: map[int64]int{}, uses: map[int64]map[string]int{}, used: map[int64]map[string]uint64{}, intN: rand.IntN}
}

// pick chooses one of addrs (non-empty, sorted) for a fire of jobID. Failover and busy-over
// probe the instances in order and fail when none answers as needed.
func (r *router) pick(ctx context.Context, st Strategy, jobID int64, addrs []string, p prober) (string, error) {
	switch st {
	case First, "":
		return addrs[0], nil
	case Last:
		return addrs[len(addrs)-1], nil
	case Random:
		return addrs[r.intN(len(addrs))], nil
	case ConsistentHash:
		return consistentHash(jobID, addrs), nil
	case Failover:
		var errs []string
		for _, a := range addrs {
			err := p.beat(ctx, a)
			if err == nil {
				return a, nil
			}
			errs = append(errs, fmt.Sprintf("%s: %v", a, err))
		}
		return "", fmt.Errorf("failover: no executor answered a beat (%v)", errs)
	case BusyOver:
		var errs []string
		for _, a := range addrs {
			idle, err := p.idleBeat(ctx, a, jobID)
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("%s: %v", a, err))
			case idle:
				return a, nil
			default:
				errs = append(errs, a+": busy")
			}
		}
		return "", fmt.Errorf("busy-over: no executor is idle for job %d (%v)", jobID, errs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch st {
	case RoundRobin:
		i := r.next[jobID] % len(addrs)
		r.next[jobID] = i + 1
		return addrs[i], nil
	case LFU:
		uses := r.uses[jobID]
		if uses == nil {
			uses = map[string]int{}
			r.uses[jobID] = uses
		}
		best := addrs[0]
		for _, a := range addrs[1:] {
			if uses[a] < uses[best] {
				best = a
			}
		}
		uses[best]++
		return best, nil
	case LRU:
		used := r.used[jobID]
		if used == nil {
			used = map[string]uint64{}
			r.used[jobID] = used
		}
		best := addrs[0]
		for _, a := range addrs[1:] {
			if used[a] < used[best] {
				best = a
			}
		}
		r.clock++
		used[best] = r.clock
		return best, nil
	}
	return "", fmt.Errorf("routing strategy %q is unknown", st)
}

// virtualNodes is how many points each address has on the hash ring: enough that jobs spread
// evenly, and that an address joining or leaving moves only about its share of the jobs.
const virtualNodes = 100

// consistentHash maps the job onto a ring of the addresses' virtual nodes: a job stays on its
// instance while instances come and go, unless its own instance goes.
func consistentHash(jobID int64, addrs []string) string {
	type point struct {
		h    uint64
		addr string
	}
	ring := make([]point, 0, len(addrs)*virtualNodes)
	for _, a := range addrs {
		for i := 0; i < virtualNodes; i++ {
			ring = append(ring, point{hash64("SHARD-" + a + "-NODE-" + strconv.Itoa(i)), a})
		}
	}
	sort.Slice(ring, func(i, j int) bool { return ring[i].h < ring[j].h })
	h := hash64(strconv.FormatInt(jobID, 10))
	i := sort.Search(len(ring), func(i int) bool { return ring[i].h >= h })
	if i == len(ring) {
		i = 0
	}
	return ring[i].addr
}

func hash64(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	// FNV's low bits mix poorly for short, similar keys; a finaliser spreads them.
	x := f.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// instanceFor is the executor instance a run sent to addr is recorded and signed for: the
// one registered there, or else (a manual address, whose executor the registry may not know,
// or an address read from no registry) the one that answers a beat there, so that every run
// is tied to one process (its results are taken from that process only). A manual address
// whose executor names no instance gets no run.
func (r *Remote) instanceFor(ctx context.Context, app, addr string) (string, error) {
	if instance := r.knownInstance(app, addr); instance != "" {
		return instance, nil
	}
	instance, err := r.beatInstance(ctx, app, addr)
	if err != nil {
		return "", fmt.Errorf("learn the executor instance at %s: %w", addr, err)
	}
	r.mu.Lock()
	got := r.instances[app]
	if instance != "" && got.learned != nil {
		got.learned[addr] = instance
	}
	r.mu.Unlock()
	if instance == "" && got.manual != nil {
		return "", fmt.Errorf("the executor at manual address %s names no instance in its beat answer, so its runs could not be tied to it", addr)
	}
	return instance, nil
}

// knownInstance is the executor instance at addr in the app's last read: the one registered
// there, or the one that answered a beat at a manual address; "" when not known.
func (r *Remote) knownInstance(app, addr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.instances[app]
	for _, in := range got.live {
		if in.Address == addr {
			return in.Instance
		}
	}
	return got.learned[addr]
}
