package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestStopWithDatabaseGone: the database goes away while a handler runs; its result cannot
// be written and nothing can be handed back, yet Stop returns within its drain and leave
// budgets (it used to retry the write for about a minute, then fail the leaving calls on the
// caller's context). PostgreSQL and MySQL are reached through a TCP proxy the test closes;
// SQLite's database is closed under the node.
func TestStopWithDatabaseGone(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		dsn := testdb.DSN(t, dialect)
		var cut func()
		if dialect != "sqlite" {
			dsn, cut = proxied(t, dialect, dsn)
		}
		st := teststore.OpenDSN(t, dsn)
		if cut == nil {
			cut = func() { st.Close() }
		}

		rec := newRecorder()
		release := make(chan struct{})
		rec.behave = func(context.Context, *Fire) Result { <-release; return Result{} }
		const drain, leave = 2 * time.Second, 2 * time.Second
		e := newEngine(t, st, rec, "node", clock.Real{}, func(c *Config) { c.DrainTimeout, c.LeaveTimeout = drain, leave })
		job := insertJob(t, st, "job", nil)
		insertTrigger(t, st, job, "once", schedule.Simple{}, time.Now().Add(100*time.Millisecond), nil)
		startEngine(t, e)
		waitFor(t, "the handler to start", rec.started, 1)

		cut()
		close(release) // the result now has nowhere to go
		start := time.Now()
		stopCtx, cancel := context.WithCancel(ctx)
		cancel() // an expired context must not cut the leaving short, nor make it hang
		err := e.Stop(stopCtx)
		took := time.Since(start)
		if err == nil {
			t.Error("Stop reported leaving cleanly from an unreachable database")
		}
		if limit := drain + leave; took > limit {
			t.Fatalf("Stop took %v with the database gone, want at most %v", took, limit)
		}
	})
}

// TestStopBoundedWhileClaimHangs: the node claims an acquired fire whose row another
// transaction holds locked, so the claim hangs; then the database is cut off (every byte
// dropped, nothing closed). Stop waits for the claim only within the drain's budget, and
// returns within DrainTimeout + LeaveTimeout. The claim used to run on a context nothing
// canceled, for up to 15 s, before the drain began.
func TestStopBoundedWhileClaimHangs(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, proxy := teststore.OpenProxied(t, dialect)
			rec := newRecorder()
			const drain, leave = time.Second, time.Second
			e := newEngine(t, st, rec, "node", clock.Real{}, func(c *Config) {
				c.DrainTimeout, c.LeaveTimeout = drain, leave
				// No acquisition and no heartbeat after the first: the cut finds only the claim
				// in flight (a commit on a connection whose bytes are dropped has no context).
				c.PollInterval, c.HeartbeatInterval, c.NodeTimeout = time.Hour, time.Hour, 3*time.Hour
			})
			job := insertJob(t, st, "job", nil)
			insertTrigger(t, st, job, "once", schedule.Simple{}, time.Now().Add(300*time.Millisecond), nil) // inside the first look-ahead
			startEngine(t, e)
			for n := 0; n == 0; {
				n = waitFor(t, "an acquisition", e.signals.acquired, 1)[0]
			}
			tx, err := st.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT id FROM executions WHERE job_id = %d FOR UPDATE", job.ID)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the claim", e.signals.claiming, 1)
			if err := proxy.Cut(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = e.Stop(ctx)
			if took, limit := time.Since(start), drain+leave+500*time.Millisecond; took > limit {
				t.Fatalf("Stop took %v with a claim hanging, want at most %v", took, limit)
			}
			proxy.Close()
			_ = tx.Rollback()
		})
	}
}

// proxied returns dsn rewritten to reach its server through a TCP proxy on localhost, and a
// function that closes the proxy and every connection through it.
func proxied(t *testing.T, dialect, dsn string) (string, func()) {
	t.Helper()
	var target string
	var rewrite func(addr string) string
	switch dialect {
	case "postgres":
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		target = u.Host
		rewrite = func(addr string) string { u.Host = addr; return u.String() }
	case "mysql":
		cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql://"))
		if err != nil {
			t.Fatal(err)
		}
		target = cfg.Addr
		rewrite = func(addr string) string { cfg.Addr = addr; return "mysql://" + cfg.FormatDSN() }
	}
	p := &tcpProxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	go p.serve()
	t.Cleanup(p.close)
	return rewrite(ln.Addr().String()), p.close
}

// tcpProxy forwards connections to target until closed; closing it cuts every connection,
// as a database server that went away would.
type tcpProxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		go func() { _, _ = io.Copy(c, up); c.Close() }()
	}
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

func (p *tcpProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestStopRunsClaimWonDuringStop: a claim is in flight (its row locked by another
// transaction) when Stop begins; the claim then wins. The fire is running in the store, so no
// other node will take it: the drain must run it. It used to be recorded canceled ("node
// stopping") without running — a fire lost to a graceful stop, seen as missing fires in
// TestJitterExactlyOnceTwoNodes under load.
func TestStopRunsClaimWonDuringStop(t *testing.T) {
	for _, dialect := range []string{"postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, dialect)
			rec := newRecorder()
			e := newEngine(t, st, rec, "node", clock.Real{}, func(c *Config) {
				c.PollInterval, c.HeartbeatInterval, c.NodeTimeout = time.Hour, time.Hour, 3*time.Hour
			})
			job := insertJob(t, st, "job", nil)
			tr := insertTrigger(t, st, job, "once", schedule.Simple{}, time.Now().Add(300*time.Millisecond), nil)
			startEngine(t, e)
			for n := 0; n == 0; {
				n = waitFor(t, "an acquisition", e.signals.acquired, 1)[0]
			}
			tx, err := st.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT id FROM executions WHERE job_id = %d FOR UPDATE", job.ID)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the claim", e.signals.claiming, 1)
			e.lifeMu.Lock()
			l := e.life
			e.lifeMu.Unlock()
			stopped := make(chan error, 1)
			go func() { stopped <- e.Stop(ctx) }()
			<-l.ctx.Done() // the stop began: the loops take no more work
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := <-stopped; err != nil {
				t.Fatalf("stop: %v", err)
			}
			k := fireKey{tr.ID, tr.NextFireAt}
			if !rec.ran(k) {
				t.Errorf("%s: claimed during the stop and never run", describe(k))
			}
			xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: job.ID})
			if err != nil {
				t.Fatal(err)
			}
			if len(xs) != 1 || xs[0].State != store.ExecSucceeded {
				for _, x := range xs {
					t.Logf("execution %d: %s %q", x.ID, x.State, x.HandleMsg)
				}
				t.Errorf("executions: %d, want one succeeded", len(xs))
			}
		})
	}
}
