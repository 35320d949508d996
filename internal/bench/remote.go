package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// RemoteConfig is the remote scenario: the steady load, run through real executors over
// HTTP. Each node is a server.Server (engine plus executor endpoints) on a loopback port;
// Executors SDK executors of one app, each on its own loopback port, run a no-op handler.
// Everything runs in this process.
type RemoteConfig struct {
	SteadyConfig
	// Executors is how many executor instances run the job. Default 2.
	Executors int
	// Routing is the job's routing strategy (dispatch.Strategies). Default round_robin;
	// sharding_broadcast is refused, since it runs each fire once per executor.
	Routing string
	// Transport is the executors' (executor.TransportStream, the default, or
	// executor.TransportPush).
	Transport string
}

// remoteHandler is the executors' handler name.
const remoteHandler = "bench-noop"

// Remote runs the remote scenario. Lateness runs from a fire's scheduled time to the start of
// its handler in the executor; a fire counts when its handler starts. Statements and
// transactions are the nodes' (the executors have no store); CPU and memory are the whole
// process's: nodes, HTTP on both sides and executors.
func Remote(ctx context.Context, opts Options, cfg RemoteConfig) (Result, error) {
	if opts.Processes > 0 {
		return Result{}, errors.New("bench: the remote scenario runs its nodes in this process (no Processes)")
	}
	if cfg.Executors <= 0 {
		cfg.Executors = 2
	}
	if cfg.Routing == "" {
		cfg.Routing = string(dispatch.RoundRobin)
	}
	st, err := dispatch.ParseStrategy(cfg.Routing)
	if err != nil {
		return Result{}, fmt.Errorf("bench: %w", err)
	}
	if st == dispatch.ShardingBroadcast {
		return Result{}, errors.New("bench: sharding_broadcast runs each fire on every executor; pick a strategy that runs it once")
	}
	c, err := openCluster(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer c.close()
	c.remote = &remoteRig{cfg: cfg, app: fmt.Sprintf("bench-%d", time.Now().UnixNano())}
	return c.steady(ctx, "remote", cfg.SteadyConfig)
}

// remoteRig is the servers and executors of a remote run, with their HTTP listeners.
type remoteRig struct {
	cfg   RemoteConfig
	app   string
	token string
	job   int64 // the bench's job, once inserted: stop quiesces it

	servers   []*server.Server
	started   []bool // servers[i]'s node was started
	https     []*http.Server
	served    sync.WaitGroup
	executors []*executor.Executor
	spool     string
}

// start brings up, in order, the servers' HTTP side, the executors (Start returns once they
// are registered), then the nodes. So every executor is live in the registry before the
// first fire is acquired, and results have an endpoint to go to from the first run.
func (r *remoteRig) start(ctx context.Context, c *cluster) error {
	r.token = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	stamp := time.Now().UnixNano()
	var urls []string
	for i, st := range c.stores {
		srv, err := server.New(server.Config{Store: st, Logger: c.opts.Logger, ExecutorToken: r.token,
			Scheduler: sundial.Config{NodeID: fmt.Sprintf("bench-%d-%d", i, stamp), Engine: c.opts.Engine}})
		if err != nil {
			return fmt.Errorf("bench: node %d: %w", i, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("bench: node %d: %w", i, err)
		}
		hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
		r.servers, r.started, r.https = append(r.servers, srv), append(r.started, false), append(r.https, hs)
		r.served.Add(1)
		go func() {
			defer r.served.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.opts.Logger.Error("bench: node HTTP server", "node", i, "err", err)
			}
		}()
		urls = append(urls, "http://"+ln.Addr().String())
	}

	spool, err := os.MkdirTemp("", "sundial-bench-spool")
	if err != nil {
		return err
	}
	r.spool = spool
	for i := range r.cfg.Executors {
		// Pushed executors spread over the nodes: any node takes registrations and results.
		// Streamed ones hold a stream to each node: a node sends runs only down its own.
		servers := []string{urls[i%len(urls)]}
		if r.cfg.Transport != executor.TransportPush {
			servers = urls
		}
		ex, err := executor.New(executor.Config{Servers: servers, Token: r.token, App: r.app, Transport: r.cfg.Transport,
			Listen: "127.0.0.1:0", SpoolDir: filepath.Join(spool, strconv.Itoa(i)), Logger: c.opts.Logger})
		if err != nil {
			return fmt.Errorf("bench: executor %d: %w", i, err)
		}
		ex.Handle(remoteHandler, func(ctx context.Context) error {
			now := time.Now().UnixNano()
			run, _ := executor.RunFrom(ctx)
			c.rec.add(fire{execution: run.ExecutionID, scheduledAt: run.ScheduledAt.UnixMilli(), startedAt: now})
			return nil
		})
		if err := ex.Start(ctx); err != nil {
			return fmt.Errorf("bench: executor %d: %w", i, err)
		}
		r.executors = append(r.executors, ex)
	}

	for i, srv := range r.servers {
		if err := srv.Start(ctx); err != nil {
			return fmt.Errorf("bench: node %d: %w", i, err)
		}
		r.started[i] = true
	}
	return nil
}

// stop quiesces the run (quiesce), then stops the nodes, then the executors, then the HTTP
// side. It returns the misfires the nodes counted.
func (r *remoteRig) stop(st store.Store) (misfires int64, err error) {
	var errs []error
	if r.job != 0 {
		if err := r.quiesce(st); err != nil {
			errs = append(errs, err)
		}
	}
	for i, srv := range r.servers {
		if !r.started[i] {
			continue
		}
		misfires += srv.Scheduler().Engine().Stats().Misfired.Load()
		if err := srv.Stop(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("bench: stop node %d: %w", i, err))
		}
		r.started[i] = false
	}
	for i, ex := range r.executors {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := ex.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("bench: stop executor %d: %w", i, err))
		}
		cancel()
	}
	r.executors = nil
	for _, hs := range r.https {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		cancel()
	}
	r.https = nil
	r.served.Wait()
	if r.spool != "" {
		os.RemoveAll(r.spool)
		r.spool = ""
	}
	return misfires, errors.Join(errs...)
}

// quiesceWait bounds how long stop waits for the last remote runs to report.
const quiesceWait = 30 * time.Second

// quiesce pauses the job's triggers, then waits until no node holds a fire and no run of the
// job is running (three reads in a row, so a fire between a node's hand-off and its record is
// not missed), so the last results reach a node. Stopping the nodes first would close the
// executors' streams with results still queued: the executors keep them in their spools for
// a next start that never comes.
func (r *remoteRig) quiesce(st store.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), quiesceWait)
	defer cancel()
	if _, err := st.TriggersPause(ctx, store.TriggerSelector{JobID: r.job}); err != nil {
		return fmt.Errorf("bench: pause the remote job: %w", err)
	}
	for quiet := 0; quiet < 3; {
		running, err := st.ExecutionsRunningByExecutor(ctx, r.app)
		if err != nil {
			return fmt.Errorf("bench: wait for the last remote runs: %w", err)
		}
		busy := 0
		for _, n := range running {
			busy += n
		}
		for i, srv := range r.servers {
			if r.started[i] {
				busy += srv.Scheduler().Engine().Backlog()
			}
		}
		if busy > 0 {
			quiet = 0
		} else {
			quiet++
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %d remote runs still running after %v", busy, quiesceWait)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// resolve fills the recorded fires' triggers from their executions in the store and counts
// the executions due in [from, to) that did not succeed.
func (r *remoteRig) resolve(ctx context.Context, st store.Store, jobID int64, rec *recorder, from, to time.Time) (incomplete int, err error) {
	trigger := map[int64]int64{}
	for after := int64(0); ; {
		xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: jobID, AfterID: after, Limit: 5000})
		if err != nil {
			return 0, fmt.Errorf("bench: list the executions: %w", err)
		}
		for _, x := range xs {
			trigger[x.ID] = x.TriggerID
			if at := time.UnixMilli(x.ScheduledAt); !at.Before(from) && at.Before(to) && x.State != store.ExecSucceeded {
				incomplete++
			}
			after = x.ID
		}
		if len(xs) < 5000 {
			break
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := range rec.fires {
		if f := &rec.fires[i]; f.execution != 0 {
			// An execution the store does not know keeps trigger 0 and so matches no
			// expected fire: it shows as missing.
			f.trigger = trigger[f.execution]
		}
	}
	return incomplete, nil
}
