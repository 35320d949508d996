package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// The end-to-end fixture: a server, a database and three real SDK executors of one app, each
// on its own port behind a gate the test can shut, as a crash or a network cut would.

// tcpGate forwards TCP connections to a target. Down refuses new connections and cuts open
// ones, so the peer behind it looks crashed; Up(target) serves again, maybe for a new target.
type tcpGate struct {
	t      *testing.T
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	target string
	conns  map[net.Conn]struct{}
	// answered counts the bytes that came back from the target: a test waits for it to know
	// an answer got through before it takes the gate down.
	answered atomic.Int64
}

func newTCPGate(t *testing.T, target string) *tcpGate {
	t.Helper()
	g := &tcpGate{t: t, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	g.serve(ln, target)
	t.Cleanup(g.Down)
	return g
}

func (g *tcpGate) url() string { return "http://" + g.addr }

func (g *tcpGate) serve(ln net.Listener, target string) {
	g.mu.Lock()
	g.ln, g.target = ln, target
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.forward(c)
		}
	}()
}

func (g *tcpGate) forward(c net.Conn) {
	g.mu.Lock()
	target := g.target
	g.mu.Unlock()
	b, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	if g.ln == nil { // went down meanwhile
		g.mu.Unlock()
		c.Close()
		b.Close()
		return
	}
	g.conns[c], g.conns[b] = struct{}{}, struct{}{}
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst io.Writer, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(countingWriter{c, &g.answered}, b)
	<-done
	c.Close()
	b.Close()
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, b)
	g.mu.Unlock()
}

func (g *tcpGate) setTarget(target string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.target = target
}

func (g *tcpGate) getTarget() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.target
}

// Down closes the listener and every open connection.
func (g *tcpGate) Down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for c := range g.conns {
		c.Close()
	}
	clear(g.conns)
}

// Up listens on the gate's address again, forwarding to target.
func (g *tcpGate) Up(target string) {
	g.t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for ln, err = net.Listen("tcp", g.addr); err != nil; ln, err = net.Listen("tcp", g.addr) {
		if time.Now().After(deadline) {
			g.t.Fatalf("gate: listen on %s again: %v", g.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.serve(ln, target)
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n.Add(int64(n))
	return n, err
}

// awaitAnswer waits until the target has answered through the gate. The executors' handlers
// start before their answer to /run is written; a gate shut in between cuts the answer, and
// the server records a failed dispatch instead of the case under test.
func (g *tcpGate) awaitAnswer() {
	g.t.Helper()
	eventually(g.t, "an answer through the gate", func() bool { return g.answered.Load() > 0 })
}

// cuttable is a transport that fails every request once cut, as a dead process sends nothing.
type cuttable struct {
	cut atomic.Bool
}

func (c *cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut off")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// crash makes the executor vanish without a word, once it answered the run it got: the
// server cannot reach it any more and it can neither beat nor report. Its handlers keep
// running inside the test process.
func (n *node) crash() {
	n.gate.awaitAnswer()
	n.client.cut.Store(true)
	n.gate.Down()
}

// node is one SDK executor of the fixture.
type node struct {
	ex     *executor.Executor
	gate   *tcpGate  // in front of its endpoint: Address() is the gate's URL
	client *cuttable // its calls to the server; cut, it can neither beat nor report
	spool  string
}

func (n *node) addr() string { return n.ex.Address() }

// runRec is what a handler saw.
type runRec struct {
	addr string
	run  executor.Run
}

// cluster is the fixture: env plus three executors of app "pool", sorted by address as the
// server sorts them. Their handler "work" acts on the job's params:
//
//	ok (or empty)    succeed
//	fail             fail
//	fail-once        fail on attempt 0, succeed after
//	fail-shard1-once fail on shard 1's attempt 0, succeed otherwise
//	hold             block until release(job) or the context ends
//	hold@ADDR        hold on the executor at ADDR, succeed elsewhere
//	stream           write "first", wait for step, write "second", succeed
type cluster struct {
	*env
	nodes []*node

	mu      sync.Mutex
	runs    map[int64]runRec
	gates   map[int64]chan struct{} // per job, closed by release
	started chan int64              // execution ids as handlers start
	step    chan struct{}
	done    chan struct{} // closed when the test ends: every hold returns
}

type clusterOpts struct {
	serverHeartbeat time.Duration // announced, and 3 of them make the sweep threshold
	execHeartbeat   time.Duration // how often the executors actually beat
}

// newCluster starts a server on a fresh database of the dialect and three executors.
// Executors beat much more often than the server's threshold, so a busy machine does not
// sweep a live one in the middle of a routing assertion.
func newCluster(t *testing.T, dialect string, o clusterOpts) *cluster {
	t.Helper()
	if o.serverHeartbeat == 0 {
		o.serverHeartbeat = time.Second
	}
	if o.execHeartbeat == 0 {
		o.execHeartbeat = 100 * time.Millisecond
	}
	c := &cluster{env: newExecutorEnv(t, dialect, o.serverHeartbeat)}
	c.startNodes(t, c.url, o.execHeartbeat)
	return c
}

func (c *cluster) startNodes(t *testing.T, serverURL string, heartbeat time.Duration) {
	t.Helper()
	c.runs, c.gates = map[int64]runRec{}, map[int64]chan struct{}{}
	c.started, c.step, c.done = make(chan int64, 64), make(chan struct{}), make(chan struct{})
	for range 3 {
		n := &node{client: &cuttable{}, spool: t.TempDir()}
		n.gate = newTCPGate(t, "127.0.0.1:1")
		// The executor listens on a port picked a moment before: another socket may take it
		// meanwhile, so a failed bind is tried again on another.
		for attempt := 0; ; attempt++ {
			listen := freeAddr(t)
			n.gate.setTarget(listen)
			ex, err := executor.New(executor.Config{Server: serverURL, Token: execToken, App: "pool",
				Transport: executor.TransportPush, Listen: listen, Advertise: n.gate.url(), SpoolDir: n.spool, HeartbeatInterval: heartbeat,
				HTTPClient: &http.Client{Transport: n.client, Timeout: 5 * time.Second}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ex.Handle("work", c.handler(n))
			n.ex = ex
			err = ex.Start(context.Background())
			if err == nil {
				break
			}
			if attempt == 4 || !strings.Contains(err.Error(), "address already in use") {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = n.ex.Stop(ctx)
		})
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() { close(c.done) }) // runs before the Stops: holds end first
	slices.SortFunc(c.nodes, func(a, b *node) int { return strings.Compare(a.addr(), b.addr()) })
	eventually(t, "three executors to be listed", func() bool {
		var list api.Page[api.Executor]
		c.call("GET", "/api/v1/executors?app=pool", nil, 200, &list)
		return len(list.Items) == 3
	})
}

func (c *cluster) handler(n *node) executor.Handler {
	return func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		c.mu.Lock()
		c.runs[run.ExecutionID] = runRec{addr: n.addr(), run: run}
		c.mu.Unlock()
		c.started <- run.ExecutionID
		log := executor.Logger(ctx)
		log.Info("ran on " + n.addr())
		p := run.Params
		if at, ok := strings.CutPrefix(p, "hold@"); ok {
			p = "ok"
			if at == n.addr() {
				p = "hold"
			}
		}
		switch p {
		case "fail":
			return errors.New("boom")
		case "fail-once":
			if run.Attempt == 0 {
				return errors.New("boom once")
			}
		case "fail-shard1-once":
			if run.ShardIndex == 1 && run.Attempt == 0 {
				return errors.New("shard 1 fails once")
			}
		case "hold":
			select {
			case <-c.gate(run.JobID):
			case <-ctx.Done():
				return ctx.Err()
			case <-c.done:
				return errors.New("test ended")
			}
		case "stream":
			log.Info("first")
			select {
			case <-c.step:
			case <-ctx.Done():
				return ctx.Err()
			case <-c.done:
				return errors.New("test ended")
			}
			log.Info("second")
		}
		return nil
	}
}

func (c *cluster) gate(job int64) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gates[job]
	if g == nil {
		g = make(chan struct{})
		c.gates[job] = g
	}
	return g
}

// release lets the job's held runs finish.
func (c *cluster) release(job int64) { close(c.gate(job)) }

func (c *cluster) rec(id int64) (runRec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.runs[id]
	return r, ok
}

// job stores a remote job of the pool running "work" with params.
func (c *cluster) job(routing, params string, tune func(*store.Job)) int64 {
	c.t.Helper()
	return c.remoteJob("pool", routing, func(j *store.Job) {
		j.Name = fmt.Sprintf("%s-%s-%d", routing, params, time.Now().UnixNano())
		j.Handler, j.Params = "work", params
		if tune != nil {
			tune(j)
		}
	})
}

// fire runs the job once now and returns the execution id.
func (c *cluster) fire(job int64) int64 {
	c.t.Helper()
	var x api.Execution
	c.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, &x)
	return x.ID
}

// await polls the execution until its state is one of states.
func (c *cluster) await(id int64, states ...string) api.Execution {
	c.t.Helper()
	var x api.Execution
	eventually(c.t, fmt.Sprintf("execution %d to be %v", id, states), func() bool {
		x = c.execution(id)
		return slices.Contains(states, x.State)
	})
	return x
}

// awaitStart waits until a handler starts the execution.
func (c *cluster) awaitStart(id int64) runRec {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if r, ok := c.rec(id); ok {
			return r
		}
		select {
		case <-c.started:
		case <-deadline:
			c.t.Fatalf("no handler started execution %d", id)
		}
	}
}

// runOnce fires the job, waits for success and returns where it ran, checking the handler
// ran on the executor the execution names.
func (c *cluster) runOnce(job int64) string {
	c.t.Helper()
	id := c.fire(job)
	x := c.await(id, "succeeded", "failed")
	if x.State != "succeeded" {
		c.t.Fatalf("execution %d: %s %q", id, x.State, x.HandleMsg)
	}
	r, ok := c.rec(id)
	if !ok || r.addr != x.ExecutorAddress {
		c.t.Fatalf("execution %d names executor %q, but the handler ran on %q (%v)", id, x.ExecutorAddress, r.addr, ok)
	}
	return x.ExecutorAddress
}

func (c *cluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
