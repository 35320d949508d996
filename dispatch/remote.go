package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
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
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/groupcommit"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/internal/startstop"
	"github.com/sundial-scheduler/sundial/internal/streamconn"
	"github.com/sundial-scheduler/sundial/internal/tracing"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// DefaultHeartbeatInterval is the executor heartbeat interval the server announces; an
// instance silent for LiveIntervals of them is gone.
const DefaultHeartbeatInterval = 3 * time.Second

// LiveIntervals is how many heartbeat intervals an instance may miss before it is gone.
const LiveIntervals = 3

// Config configures Remote.
type Config struct {
	// Store is the cluster's database: apps, registry, executions, and the cluster key that
	// signs every call to an executor (keys.go). No secret is sent to an executor.
	Store store.Store
	// HeartbeatInterval is the executors' heartbeat interval. Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// Client makes the calls to executors. Default: a client with a 10 s timeout that keeps
	// up to 64 idle connections per executor (the default transport keeps two, and a burst
	// of fires would open a new connection for each).
	Client *http.Client
	// Logger receives the dispatcher's logs. Default: slog.Default().
	Logger *slog.Logger
	// Clock is the time source: the age of cached executor lists, the pauses between repeats
	// of a /run, the times of shards no executor took. Default: clock.Real{}.
	Clock clock.Clock
	// Secrets opens the access tokens of xxl-job apps (sealed in the database with the
	// server's secret key). Default: no key, so xxl-job apps cannot be dispatched to.
	Secrets *secret.Keyring
	// XXLLogInterval is how often the output of a run on an XXL-JOB executor is pulled while
	// it runs. Default DefaultXXLLogInterval.
	XXLLogInterval time.Duration
	// ExecutorWait is how long a fire that finds no executor of its app online waits for one
	// (reading the registry again every heartbeat interval) before it fails. Default
	// DefaultExecutorWait.
	ExecutorWait time.Duration
}

// DefaultExecutorWait is the default Config.ExecutorWait: the engine's default misfire
// threshold, beyond which a fire is late enough for its trigger's misfire policy anyway.
const DefaultExecutorWait = 60 * time.Second

// everRegistered is the silence within which RegistryLive counts every instance the registry
// still holds.
const everRegistered = 100 * 365 * 24 * time.Hour

// Remote dispatches fires of remote jobs to executors (docs/executor-protocol.md).
type Remote struct {
	cfg    Config
	router *router
	stats  Stats
	keys   *keyring
	// sends and acceptances write the dispatch records of concurrent fires in batches, in
	// two queues: a fire's send waits for no acceptance.
	sends, acceptances *groupcommit.Batcher[store.DispatchRecord, bool]

	// complete records results with the engine's job policy (Engine.CompleteRemote): set by
	// RecordWith before the engine starts.
	complete func(context.Context, []engine.RemoteResult) ([]int64, error)
	// seesDatabaseFor is the node's view of the database (Engine.SeesDatabaseFor): set by
	// SeesDatabaseWith; nil counts as always seeing it.
	seesDatabaseFor func(time.Duration) bool

	// instances caches each app's executors for a moment (see addresses).
	mu        sync.Mutex
	instances map[string]appInstances
	// reading holds, per app, the read in flight: fires that miss the cache meanwhile wait
	// for it instead of reading too.
	reading map[string]*appRead
	// waitHook, set by tests, is called when a fire waits for another's read.
	waitHook func()
	// streams are the executor streams this node holds, by instance (stream.go).
	streams map[string]*Stream
	// vouching keeps the streams' instances alive in the registry (vouch), from the first
	// stream until Close.
	vouching startstop.Base

	// The followers of XXL-JOB runs' output (xxl.go) run until Close.
	ctx       context.Context
	cancel    context.CancelFunc
	closing   chan struct{}
	closeOnce sync.Once
	followers sync.WaitGroup
}

// Close stops following the output of runs on XXL-JOB executors and waits for the
// followers to end. Call it before the store closes.
func (r *Remote) Close() {
	r.closeOnce.Do(func() {
		close(r.closing)
		r.cancel()
	})
	r.vouching.Stop()
	r.followers.Wait()
}

// appInstances is what addresses read of an app: its manual addresses, or its live
// instances.
type appInstances struct {
	// app is the app's row; nil for an app only registered executors made.
	app     *store.App
	manual  []string
	live    []*store.Instance
	fetched time.Time
	// learned are the instances that answered a beat at manual addresses (instanceFor),
	// for as long as the read is cached; guarded by Remote.mu.
	learned map[string]string
}

// Stats counts the dispatches (and broadcast shards) that no executor took, by reason, for
// the metrics: each is also an execution failed with the reason.
type Stats struct {
	// NoExecutor: the app had no instance online.
	NoExecutor atomic.Int64
	// NoHandler: instances were online, but none registered the job's handler.
	NoHandler atomic.Int64
	// Unreachable: the picked executor did not answer, or failover and busy-over found none
	// that would.
	Unreachable atomic.Int64
	// Refused: the executor answered accepted=false (an unknown handler, a discarded run).
	Refused atomic.Int64
	// NotOwned: the fire was no longer the dispatching node's (the cluster declared it dead).
	NotOwned atomic.Int64
	// Busy: the executors tried answered busy (they hold as many runs as they may, or are
	// stopping) until the fire's dispatch wait ran out.
	Busy atomic.Int64
	// Unanswered: runs sent whose executor's answer never came (a stream closed, a timeout, a
	// 5xx): not failed, since the executor may have taken them; its heartbeats say whether it
	// holds each, and one it does not is declared lost.
	Unanswered atomic.Int64
	// Waiting counts the fires waiting now for an executor to take them: none of their app
	// online, or every one tried busy or not taking runs.
	Waiting atomic.Int64
}

// Stats returns the dispatcher's counters.
func (r *Remote) Stats() *Stats { return &r.stats }

// NewRemote returns a Remote dispatcher.
func NewRemote(cfg Config) *Remote {
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		cfg.Client = &http.Client{Timeout: callTimeout, Transport: t}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.XXLLogInterval <= 0 {
		cfg.XXLLogInterval = DefaultXXLLogInterval
	}
	if cfg.ExecutorWait <= 0 {
		cfg.ExecutorWait = DefaultExecutorWait
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Remote{cfg: cfg, router: newRouter(), instances: map[string]appInstances{}, reading: map[string]*appRead{},
		streams: map[string]*Stream{},
		sends:   recordBatcher(cfg.Store), acceptances: recordBatcher(cfg.Store),
		ctx: ctx, cancel: cancel, closing: make(chan struct{}),
		keys: &keyring{st: cfg.Store, clk: cfg.Clock, interval: cfg.HeartbeatInterval}}
}

var _ engine.Dispatcher = (*Remote)(nil)

// Dispatch sends the fire to the instance(s) its job's routing picks. It returns Async when
// an executor accepted the run, and a failure saying why otherwise.
func (r *Remote) Dispatch(ctx context.Context, f *engine.Fire) engine.Result {
	job := f.Job
	st, err := ParseStrategy(job.Routing)
	if err != nil {
		return engine.Result{Err: fmt.Errorf("job %d: %w", job.ID, err)}
	}
	deadline := r.cfg.Clock.Now().Add(r.dispatchWait(job))
	for {
		addrs, online, app, err := r.addresses(ctx, job.App, job.Handler)
		// None online, or the registry could not be read (the database is away): wait. A job
		// that names no app has nothing to wait for.
		if job.App != "" && (err != nil || len(addrs) == 0 && online == 0) {
			addrs, online, app, err = r.awaitExecutor(ctx, job, deadline, err)
		}
		if err != nil {
			return engine.Result{Err: err}
		}
		res := r.dispatchTo(ctx, f, st, addrs, online, app)
		// Every executor online was tried and none took the run (they are busy, their streams
		// closed as it was sent, or they refused connections while restarting): the run is on
		// none, so it waits for one as a fire that found none online does, instead of failing
		// while the executors are alive and dialling back or working through their runs. A
		// broadcast is not sent again: its other shards went out.
		if job.App == "" || st == ShardingBroadcast || !errors.Is(res.Err, errNotTaken) {
			return r.countNotTaken(res)
		}
		if !r.pause(ctx, deadline) {
			return r.countNotTaken(res)
		}
	}
}

// dispatchTo sends the fire to the instance(s) at addrs its job's routing picks (online
// counts the app's instances online, with the handler or not).
func (r *Remote) dispatchTo(ctx context.Context, f *engine.Fire, st Strategy, addrs []string, online int, app *store.App) engine.Result {
	job := f.Job
	var xc *xxljob.Client
	var p prober = nativeProber{r, job.App}
	if app != nil && app.Protocol == store.ProtocolXXLJob {
		var err error
		if xc, err = r.XXLClient(app); err != nil {
			return engine.Result{Err: err}
		}
		p = xxlProber{xc}
	}
	if len(addrs) == 0 {
		if online > 0 {
			r.stats.NoHandler.Add(1)
			return engine.Result{Err: fmt.Errorf("no executor of app %q has handler %q (%d online without it)", job.App, job.Handler, online)}
		}
		r.stats.NoExecutor.Add(1)
		return engine.Result{Err: fmt.Errorf("no executor of app %q is online (with handler %q)", job.App, job.Handler)}
	}
	if st == ShardingBroadcast {
		if ex := f.Execution; ex.ShardTotal > 0 {
			// A retry (or recovery) of one shard: only that shard runs again, on the instance
			// at its index while the instances are the same, so a broadcast is not multiplied
			// by its failures. XXL-JOB does the same with registryList[index].
			return r.send(ctx, ex, job, addrs[ex.ShardIndex%len(addrs)], ex.ShardIndex, ex.ShardTotal, xc, f.WorkflowInput)
		}
		return r.broadcast(ctx, f, addrs, xc)
	}
	addr, err := r.router.pick(ctx, st, job.ID, addrs, p)
	if err != nil {
		r.stats.Unreachable.Add(1)
		return engine.Result{Err: fmt.Errorf("app %q: %w", job.App, err)}
	}
	res := r.send(ctx, f.Execution, job, addr, 0, 1, xc, f.WorkflowInput)
	// A run no executor took is on none, so the app's other executors are tried in turn after
	// the one picked (the routing says which executor is preferred, not that the fire fails
	// when that one is down: a restarting executor refuses connections for a while, and one
	// that registered before the cluster key it is signed with refuses the signature). A run
	// that may have reached one is never sent to another: it could run twice.
	var passed []string
	start := slices.Index(addrs, addr)
	for i := 1; i < len(addrs) && errors.Is(res.Err, errNotTaken); i++ {
		passed = append(passed, addr)
		addr = addrs[(start+i)%len(addrs)]
		res = r.send(ctx, f.Execution, job, addr, 0, 1, xc, f.WorkflowInput)
	}
	if res.Async && len(passed) > 0 {
		r.cfg.Logger.Info("a run went to another executor: the one picked did not take it",
			"execution", f.Execution.ID, "job", job.ID, "not_taken_by", passed, "sent_to", addr)
		res.Message = fmt.Sprintf("%s (%s did not take it)", res.Message, strings.Join(passed, ", "))
	}
	return res
}

// countNotTaken counts a run no executor took (send leaves that to its caller, which may send
// it to another), and returns res.
func (r *Remote) countNotTaken(res engine.Result) engine.Result {
	switch {
	case busy(res.Err):
		r.stats.Busy.Add(1)
	case errors.Is(res.Err, errNotTaken):
		r.stats.Unreachable.Add(1)
	}
	return res
}

// busy reports whether err is an executor's answer that it did not take a run and the run
// should be offered again (429: it holds as many runs as it may, or it is stopping). The
// executor answers so only after checking it does not hold the run.
func busy(err error) bool {
	st := (*wire.StatusError)(nil)
	return errors.As(err, &st) && st.Status == http.StatusTooManyRequests
}

// errNotTaken marks a run that no executor took: every attempt to send it failed in a way
// that leaves it on none (notTaken). Such a run may go to another executor.
var errNotTaken = errors.New("no executor took the run")

// notTaken reports whether err is a call's failure that leaves the call undone: a connection
// that could not be opened, a stream this node does not hold, or a stream that closed while
// the call was still queued on it (nothing was written: the HTTP transport repeats a request
// on another connection only when nothing was written on the first, so a dial error means the
// request went nowhere), or an answer refusing it (a 4xx: a
// signature it does not take, a call meant for another executor), which an executor gives
// before it serves the call. A lost answer, a timeout or a 5xx may come after the call was
// served.
func notTaken(err error) bool {
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if st := (*wire.StatusError)(nil); errors.As(err, &st) && st.Status >= 400 && st.Status < 500 {
		return true
	}
	if m := (*MisdirectedError)(nil); errors.As(err, &m) {
		return true
	}
	return errors.Is(err, errNoStream) || errors.Is(err, streamconn.ErrNotSent)
}

// send records the address on the execution, then posts the run, then records that the
// executor accepted it. The address is recorded first so that a result or a sweep that races
// the answer finds it, and both records are compare-and-sets on the node's life that runs the
// fire: a life the cluster declared dead (frozen past the node timeout) sends nothing, since
// the run was declared lost and may have been fired again. Until the acceptance is recorded
// the run is the node's, and is lost with it (no executor said it has it); after, it is the
// executor's.
// An XXL-JOB app's runs (xc set) go out by sendXXL.
func (r *Remote) send(ctx context.Context, ex *store.Execution, job *store.Job, addr string, index, total int, xc *xxljob.Client, input string) engine.Result {
	if xc != nil {
		return r.sendXXL(ctx, ex, job, addr, index, total, xc, input)
	}
	msg := fmt.Sprintf("sent to %s", addr)
	if total > 1 {
		msg = fmt.Sprintf("shard %d/%d sent to %s", index, total, addr)
	}
	instance, err := r.instanceFor(ctx, job.App, addr)
	if err != nil {
		if notTaken(err) {
			return engine.Result{Err: fmt.Errorf("execution %d: %w: %w", ex.ID, errNotTaken, err)}
		}
		r.stats.Unreachable.Add(1)
		return engine.Result{Err: fmt.Errorf("execution %d: %w", ex.ID, err)}
	}
	owner := store.OwnerOf(ex)
	ours, err := r.setDispatch(ctx, job, owner, ex.ID, addr, instance, index, total, msg)
	if err != nil {
		return engine.Result{Err: err}
	}
	if !ours {
		r.stats.NotOwned.Add(1)
		return engine.Result{Err: fmt.Errorf("execution %d is no longer running for node %s (incarnation %s): not sent", ex.ID, owner.Node, owner.Incarnation)}
	}
	req := wire.RunRequest{ExecutionID: ex.ID, JobID: job.ID, Handler: job.Handler, Params: paramsOf(ex, job), ParamsSecret: job.ParamsSecret,
		TimeoutMs: job.TimeoutMs, Concurrency: sentPolicy(job), MaxConcurrent: job.MaxConcurrent, ShardIndex: index, ShardTotal: total,
		ScheduledAt: ex.ScheduledAt, Attempt: ex.Attempt, TriggerID: ex.TriggerID, FiredAt: ex.FiredAt,
		IdempotencyKey: jobrun.IdempotencyKey(job.ID, ex.TriggerID, ex.ScheduledAt, index), Instance: instance,
		IntervalStart: ex.IntervalStart, IntervalEnd: ex.IntervalEnd, BackfillID: ex.BackfillID, FireZone: ex.FireZone}
	if input != "" {
		req.WorkflowInput = wire.RawJSON(input)
	}
	var resp wire.RunResponse
	sendCtx, cancel := context.WithTimeout(ctx, SendWindow)
	err = r.callRepeating(sendCtx, job.App, addr, wire.PathRun, instance, req, &resp)
	cancel()
	if m := (*MisdirectedError)(nil); errors.As(err, &m) && m.Reason == wire.MisdirectedInstance && m.Instance != "" {
		err = r.resendToInstance(ctx, ex, job, addr, index, total, msg, &req, &resp, m.Instance)
	}
	if err != nil && !errors.Is(err, errNotTaken) && instance != "" && ctx.Err() == nil {
		// Sent, and no answer came back (a stream closed, a timeout, a 5xx): the executor may
		// have taken the run, so failing it here could have the job's retry run it twice. The
		// dispatch names the instance, whose heartbeats list the runs it holds: the run's
		// result comes from it, or the run is declared lost when its beats leave it out
		// (engine.CheckExecutorBeat). A run whose own context ended (its timeout, a kill, the
		// node stopping) ends here as before.
		r.stats.Unanswered.Add(1)
		r.cfg.Logger.Warn("no answer from the executor a run was sent to: its heartbeats will say whether it holds the run",
			"execution", ex.ID, "job", job.ID, "address", addr, "instance", instance, "err", err)
		return engine.Result{Async: true, Message: fmt.Sprintf("%s, no answer saying it took the run (%v): left to the executor's heartbeats", msg, err)}
	}
	if err != nil {
		if !errors.Is(err, errNotTaken) {
			r.stats.Unreachable.Add(1)
		}
		return engine.Result{Err: fmt.Errorf("executor %s did not take execution %d: %w", addr, ex.ID, err)}
	}
	if !resp.Accepted {
		r.stats.Refused.Add(1)
		return engine.Result{Err: fmt.Errorf("executor %s refused execution %d: %s", addr, ex.ID, resp.Message)}
	}
	r.accepted(ctx, owner, ex.ID)
	return engine.Result{Async: true, Message: msg}
}

// setDispatch records where o's running execution id of job is being sent
// (Store.ExecutionsRecordDispatches), in a statement shared with the records of the fires
// dispatched meanwhile. A write the database does not take is made again, on writeRepeats'
// pauses, for as long as the fire may wait for an executor (dispatchWait): nothing has been
// sent yet, so an outage makes the run late, not failed. The record is a compare-and-set on
// o's life, so a write made twice (the first applied, its answer lost) answers alike.
func (r *Remote) setDispatch(ctx context.Context, job *store.Job, o store.Owner, id int64, address, instance string, index, total int, msg string) (bool, error) {
	rec := store.DispatchRecord{Owner: o, ID: id, Address: address, Instance: instance,
		ShardIndex: index, ShardTotal: total, Message: msg}
	deadline := r.cfg.Clock.Now().Add(r.dispatchWait(job))
	var ours bool
	err := backoff.Retry(ctx, r.cfg.Clock, writeRepeats, 0, func(ctx context.Context) error {
		var err error
		ours, err = r.sends.Do(ctx, rec)
		if err != nil && !r.cfg.Clock.Now().Before(deadline) {
			return backoff.Permanent(err)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("execution %d not sent: %w", id, err)
	}
	return ours, nil
}

// writeRepeats paces the attempts to record a dispatch or an acceptance while the database
// is away.
var writeRepeats = backoff.Policy{Initial: 100 * time.Millisecond, Factor: 2, Max: 5 * time.Second}

// dispatchWait is how long a fire of job may wait to be dispatched (for an executor to be
// online, or for its dispatch to be recorded): the job's dispatch timeout, else
// Config.ExecutorWait.
func (r *Remote) dispatchWait(job *store.Job) time.Duration {
	if job.DispatchTimeoutMs > 0 {
		return time.Duration(job.DispatchTimeoutMs) * time.Millisecond
	}
	return r.cfg.ExecutorWait
}

// accepted records that the executor took o's execution id (Store.ExecutionsRecordDispatches),
// batched as setDispatch is, and writes it again until it is recorded or the run's context
// ends (the node stops). Unrecorded, the run stays the node's: lost with it if it dies, and
// run again if the job requests recovery, while the executor runs it too.
func (r *Remote) accepted(ctx context.Context, o store.Owner, id int64) {
	err := backoff.Retry(ctx, r.cfg.Clock, writeRepeats, 0, func(ctx context.Context) error {
		_, err := r.acceptances.Do(ctx, store.DispatchRecord{Owner: o, ID: id, Accepted: true})
		return err
	})
	if err != nil {
		r.cfg.Logger.Warn("the executor's acceptance of a run could not be recorded: the run stays the node's", "execution", id, "err", err)
	}
}

// RecordWith makes the dispatcher record the outcome of a broadcast shard that no executor
// took through complete, the engine's Engine.CompleteRemote, so the job's retry and alarm
// apply to it as to any failed run. Call it before the engine starts (the engine is built
// with the dispatcher, so it cannot be given in Config).
func (r *Remote) RecordWith(complete func(context.Context, []engine.RemoteResult) ([]int64, error)) {
	r.complete = complete
}

// SeesDatabaseWith gives the dispatcher the node's view of the database
// (Engine.SeesDatabaseFor), before the engine starts: an executor is not offline because the
// database could not record its beats.
func (r *Remote) SeesDatabaseWith(sees func(time.Duration) bool) { r.seesDatabaseFor = sees }

// awaitExecutor reads the app's executors again every heartbeat interval until one is
// online, or deadline (the job's dispatch timeout, ExecutorWait when it has none, from the
// fire's dispatch) has passed, or ctx ends: a fire that finds none (the executors
// restarting, or their beats not yet recorded after an outage), or cannot read the registry
// (the database is away), waits for one before it fails. It returns what it read last, or
// the last read's error.
func (r *Remote) awaitExecutor(ctx context.Context, job *store.Job, deadline time.Time, err error) ([]string, int, *store.App, error) {
	for r.pause(ctx, deadline) {
		addrs, online, app, rerr := r.addresses(ctx, job.App, job.Handler)
		if rerr == nil && (len(addrs) > 0 || online > 0) {
			return addrs, online, app, nil
		}
		err = rerr
	}
	return nil, 0, nil, err
}

// pause waits a heartbeat interval, or until deadline if that comes first, counted in
// Stats.Waiting. It reports false, without waiting, once deadline has passed, and when ctx
// ends.
func (r *Remote) pause(ctx context.Context, deadline time.Time) bool {
	wait := min(r.cfg.HeartbeatInterval, deadline.Sub(r.cfg.Clock.Now()))
	if wait <= 0 {
		return false
	}
	r.stats.Waiting.Add(1)
	defer r.stats.Waiting.Add(-1)
	t := r.cfg.Clock.NewTimer(wait)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.C():
		return true
	}
}

// resendToInstance sends a run again to the executor instance that answered at addr, when
// the run had been recorded for another (the executor restarted since the instances were
// read): the run is recorded for the new instance first, so that the server never counts a
// run as held by an instance that does not have it. The executor that answered is of the
// run's app (it said wrong_instance, which it says only to a call signed for its app), and
// the call is signed for that app again: an executor of another app never takes it.
func (r *Remote) resendToInstance(ctx context.Context, ex *store.Execution, job *store.Job, addr string, index, total int, msg string,
	req *wire.RunRequest, resp *wire.RunResponse, answered string) error {
	ok, err := r.setDispatch(ctx, job, store.OwnerOf(ex), ex.ID, addr, answered, index, total, msg)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("execution %d ended while it was sent to the executor's new instance %s", ex.ID, answered)
	}
	req.Instance = answered
	*resp = wire.RunResponse{}
	sendCtx, cancel := context.WithTimeout(ctx, SendWindow) // from the dispatch just recorded again
	defer cancel()
	return r.callRepeating(sendCtx, job.App, addr, wire.PathRun, req.Instance, req, resp)
}

// broadcast runs the fire on every instance. The fire's own execution is shard 0; shards
// 1..n-1 are new executions with the same job, trigger, scheduled time and attempt (the fire
// key includes the shard index, so each shard exists once), inserted running on this node so
// that the node's death or the executor's loss is handled as for any running execution. A
// shard that no executor takes is recorded failed at once, and like a shard that fails or is
// lost later it is retried alone per the job (its retry keeps its index and total).
func (r *Remote) broadcast(ctx context.Context, f *engine.Fire, addrs []string, xc *xxljob.Client) engine.Result {
	ex, job, total := f.Execution, f.Job, len(addrs)
	shards := make([]*store.Execution, 0, total-1)
	for i := 1; i < total; i++ {
		shards = append(shards, &store.Execution{JobID: ex.JobID, TriggerID: ex.TriggerID, ScheduledAt: ex.ScheduledAt,
			FiredAt: ex.FiredAt, Cause: ex.Cause, Attempt: ex.Attempt, Node: ex.Node, Incarnation: ex.Incarnation, ExecutorAddress: addrs[i],
			ExecutorApp: job.App, ShardIndex: i, ShardTotal: total, State: store.ExecRunning, StartedAt: ex.FiredAt,
			Params: ex.Params, ScriptVersion: job.ScriptVersion,
			IntervalStart: ex.IntervalStart, IntervalEnd: ex.IntervalEnd, BackfillID: ex.BackfillID, FireZone: ex.FireZone})
	}
	dups, err := r.cfg.Store.ExecutionsInsert(ctx, shards)
	if err != nil {
		return engine.Result{Err: fmt.Errorf("broadcast of execution %d: insert %d shards: %w", ex.ID, len(shards), err)}
	}
	for _, sh := range shards {
		if slices.Contains(dups, sh) {
			continue // sent already by an earlier dispatch of this fire
		}
		res := r.countNotTaken(r.send(ctx, sh, job, addrs[sh.ShardIndex], sh.ShardIndex, total, xc, ""))
		if res.Async {
			continue
		}
		if err := r.shardFailed(ctx, sh, res.Err); err != nil {
			r.cfg.Logger.Error("recording a failed shard", "execution", sh.ID, "err", err)
		}
	}
	return r.send(ctx, ex, job, addrs[0], 0, total, xc, "") // Dispatch counts it
}

// shardFailed records that no executor took a shard: with the job's retry and alarm through
// the engine, or (a dispatcher used without one) as a bare failure.
func (r *Remote) shardFailed(ctx context.Context, sh *store.Execution, cause error) error {
	now := r.cfg.Clock.Now()
	if r.complete != nil {
		_, err := r.complete(ctx, []engine.RemoteResult{{ExecutionID: sh.ID, State: store.ExecFailed, Code: 500,
			Message: cause.Error(), Started: now, Finished: now}})
		return err
	}
	_, err := r.cfg.Store.ExecutionsCompleteOwned(ctx, store.OwnerOf(sh), []store.ExecutionResult{{ID: sh.ID, State: store.ExecFailed,
		HandleCode: 500, HandleMsg: cause.Error(), StartedAt: now.UnixMilli(), FinishedAt: now.UnixMilli()}})
	return err
}

// addresses returns the app's executor addresses, sorted: its manual list, or its live
// instances that run the handler (an instance that reports no handlers may run any), and how
// many instances are online with or without the handler, and the app's row (nil if it has
// none). An app with no row is in auto mode, so executors can register before anyone defines
// their app.
func (r *Remote) addresses(ctx context.Context, app, handler string) ([]string, int, *store.App, error) {
	if app == "" {
		return nil, 0, nil, errors.New("the job names no app: a remote job needs the app whose executors run it")
	}
	got, err := r.appInstances(ctx, app)
	if err != nil {
		return nil, 0, nil, err
	}
	if got.manual != nil {
		return slices.Clone(got.manual), len(got.manual), got.app, nil
	}
	var out []string
	online := 0
	for _, in := range got.live {
		if streamed, here := r.streamHere(in.Address); streamed && !here {
			continue // its stream is another node's: this one cannot reach it
		}
		online++
		if len(in.Handlers) == 0 || slices.Contains(in.Handlers, handler) {
			out = append(out, in.Address)
		}
	}
	slices.Sort(out)
	return out, online, got.app, nil
}

// appInstances reads the app's manual addresses or live instances, reusing a read younger
// than half a heartbeat interval (at most a second): an instance counts as live for three
// intervals anyway, and two queries per fire were most of a remote fire's database work. An
// app with no executor is read again every time, so the first executor to register is used
// at once.
func (r *Remote) appInstances(ctx context.Context, app string) (appInstances, error) {
	ttl := min(r.cfg.HeartbeatInterval/2, time.Second)
	for {
		r.mu.Lock()
		got, ok := r.instances[app]
		now := r.cfg.Clock.Now()
		if ok && now.Sub(got.fetched) < ttl {
			r.mu.Unlock()
			return got, nil
		}
		reading, busy := r.reading[app]
		if !busy {
			// This fire reads for every fire that misses meanwhile: a burst that found the
			// read stale made one query each (measured: 0.2 reads of the app and 0.2 of its
			// registry per fire at 1,000 fires/s).
			reading = &appRead{done: make(chan struct{})}
			r.reading[app] = reading
			r.mu.Unlock()
			reading.got, reading.err = r.readAppInstances(ctx, app, now)
			r.mu.Lock()
			delete(r.reading, app)
			r.mu.Unlock()
			close(reading.done)
			return reading.got, reading.err
		}
		if r.waitHook != nil {
			r.waitHook()
		}
		r.mu.Unlock()
		select {
		case <-reading.done:
			if reading.err == nil {
				return reading.got, nil
			}
			// The read failed (perhaps only its fire's context ended): read again.
		case <-ctx.Done():
			return appInstances{}, ctx.Err()
		}
	}
}

// appRead is a read of an app's instances in flight, shared by the fires that wait for it.
type appRead struct {
	done chan struct{} // closed when got and err are set
	got  appInstances
	err  error
}

// readAppInstances reads the app's manual addresses or live instances (appInstances), and
// caches what it read when it found any executor.
func (r *Remote) readAppInstances(ctx context.Context, app string, now time.Time) (appInstances, error) {
	got := appInstances{fetched: now, learned: map[string]string{}}
	a, err := r.cfg.Store.AppGet(ctx, app)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return got, err
	default:
		got.app = a
	}
	if got.app != nil && got.app.AddressMode == store.AddressManual {
		got.manual = slices.Clone(a.Addresses)
		if got.manual == nil {
			got.manual = []string{}
		}
		slices.Sort(got.manual)
	}
	if got.manual == nil {
		silence := LiveIntervals * r.cfg.HeartbeatInterval
		if r.seesDatabaseFor != nil && !r.seesDatabaseFor(silence) {
			// The executor sweep's rule: while this node has not seen the database for as
			// long as an instance may stay silent, the beats executors sent meanwhile may not
			// have been recorded, and every instance the registry still holds counts (the
			// sweep forgets one only once the leader has seen the database that long).
			silence = everRegistered
		}
		if got.live, err = r.cfg.Store.RegistryLive(ctx, app, silence); err != nil {
			return got, err
		}
	}
	if len(got.manual)+len(got.live) > 0 {
		r.mu.Lock()
		r.instances[app] = got
		r.mu.Unlock()
	}
	return got, nil
}

// callTimeout bounds one call to an executor with the default client.
const callTimeout = 10 * time.Second

// SendWindow is the longest a run's /run calls (its repeats included: a call may hang on a
// connection to an executor that died, and the repeat reach its successor) go on after the
// dispatch is recorded. The server gives a run that long, past its executor's heartbeats, to
// show up in them before it declares it lost; a /run still in flight after that could start
// the run beside its retry.
const SendWindow = runAttempts*callTimeout + 2*time.Second

// runRepeats paces the repeats of a /run that got no answer: sent again after 100 ms, then
// after 400 ms.
var runRepeats = backoff.Policy{Initial: 100 * time.Millisecond, Factor: 4}

const runAttempts = 3

// callRepeating is call for /run: when no answer comes back (the connection dropped, the
// executor restarted), the call is sent again, with the same execution id. The executor may
// have taken the run and only its answer was lost; it answers a repeat "accepted" without
// running it twice, where failing the fire here would have the job's retry run it again.
// An answer with a status (a refusal, a bad token) is not repeated.
// When no attempt left the run with the executor (notTaken), the error is errNotTaken.
func (r *Remote) callRepeating(ctx context.Context, app, addr, path, instance string, body, out any) error {
	mayHold := false
	err := backoff.Retry(ctx, r.cfg.Clock, runRepeats, runAttempts, func(ctx context.Context) error {
		err := r.call(ctx, app, addr, path, instance, body, out)
		switch {
		case busy(err):
			// Answered by the instance after it checked it does not hold the run: whatever
			// became of an earlier attempt, the run is not there.
			mayHold = false
		case err != nil && !notTaken(err):
			mayHold = true
		}
		if status, m := (*wire.StatusError)(nil), (*MisdirectedError)(nil); errors.As(err, &status) || errors.As(err, &m) {
			return backoff.Permanent(err)
		}
		return err
	})
	if err != nil && !mayHold {
		return fmt.Errorf("%w: %w", errNotTaken, err)
	}
	return err
}

// nativeProber beats an app's native executors for the routing strategies.
type nativeProber struct {
	r   *Remote
	app string
}

func (p nativeProber) beat(ctx context.Context, addr string) error {
	_, err := p.r.beatInstance(ctx, p.app, addr)
	return err
}

func (p nativeProber) idleBeat(ctx context.Context, addr string, jobID int64) (bool, error) {
	var out wire.IdleBeatResponse
	_, err := p.r.probe(ctx, p.app, addr, wire.PathIdleBeat, wire.IdleBeatRequest{JobID: jobID}, &out)
	return out.Idle, err
}

// beatInstance beats the executor of app at addr and returns its instance id ("" from an
// executor that does not say).
func (r *Remote) beatInstance(ctx context.Context, app, addr string) (string, error) {
	var out wire.BeatResponse
	if _, err := r.probe(ctx, app, addr, wire.PathBeat, struct{}{}, &out); err != nil {
		return "", err
	}
	return out.Instance, nil
}

// probe makes a harmless call (beat, idle-beat) to the executor of app at addr, signed for
// the instance known there or, none known, for the address: only the executor meant takes
// it, so a captured call cannot be replayed to another. An executor of the app that is
// another instance (it restarted) or knows itself by another address (a proxy in front of
// it) names itself in its refusal, and is asked again, signed for it; it returns the
// instance the call was last signed for.
func (r *Remote) probe(ctx context.Context, app, addr, path string, body, out any) (string, error) {
	instance := r.knownInstance(app, addr)
	err := r.call(ctx, app, addr, path, instance, body, out)
	if m := (*MisdirectedError)(nil); errors.As(err, &m) && m.Reason != wire.MisdirectedApp && m.Instance != "" && m.Instance != instance {
		instance = m.Instance
		err = r.call(ctx, app, addr, path, instance, body, out)
	}
	return instance, err
}

// Kill asks the executor instance of app at addr to stop the execution; it reports whether
// it did, and which instance answered: the caller takes the answer only from the instance
// the run was handed to. Another instance refuses the call (*MisdirectedError).
func (r *Remote) Kill(ctx context.Context, app, addr, instance string, executionID int64) (killed bool, answered string, err error) {
	var out wire.KillResponse
	err = r.call(ctx, app, addr, wire.PathKill, instance, wire.KillRequest{ExecutionID: executionID}, &out)
	if m := (*MisdirectedError)(nil); errors.As(err, &m) && m.Reason == wire.MisdirectedInstance {
		return false, m.Instance, nil
	}
	return out.Killed, out.Instance, err
}

// OtherInstanceError is a kill answered by another executor instance than the one the run
// was handed to: its answer says nothing about the run.
type OtherInstanceError struct {
	Address, Instance, Answered string
}

func (e *OtherInstanceError) Error() string {
	return fmt.Sprintf("the executor at %s is instance %q now, not %q the run was handed to; the run is lost with that one",
		e.Address, e.Answered, e.Instance)
}

// MisdirectedError is an executor's refusal of a call meant for another executor (another
// app, another instance, or another address): the call did nothing.
type MisdirectedError struct {
	Address string
	wire.Misdirected
}

func (e *MisdirectedError) Error() string {
	return fmt.Sprintf("the executor at %s refused the call as not its own (%s): %s", e.Address, e.Reason, e.Message)
}

// killNative kills a native executor's run, signed for the app and instance the run was
// handed to, and takes the answer only from that instance (*OtherInstanceError otherwise;
// ErrNotFound, wrapped, when the run is not running any more).
func (r *Remote) killNative(ctx context.Context, id int64) (bool, error) {
	d, err := r.cfg.Store.ExecutionDispatchedTo(ctx, id)
	if err != nil {
		return false, err
	}
	killed, answered, err := r.Kill(ctx, d.App, d.Address, d.Instance, id)
	if err == nil && d.Instance != "" && answered != d.Instance {
		return false, &OtherInstanceError{Address: d.Address, Instance: d.Instance, Answered: answered}
	}
	return killed, err
}

// call POSTs body as JSON to addr+path, signed with the cluster key for the executor of app
// at addr with instance ("" when not known: the address then binds it), and decodes a 200
// answer. Each call is signed anew, so a repeat is not taken for a replay.
func (r *Remote) call(ctx context.Context, app, addr, path, instance string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if strings.HasPrefix(addr, wire.StreamScheme) {
		return r.callStream(ctx, app, addr, path, instance, b, out)
	}
	addr = strings.TrimSuffix(addr, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, addr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	signer, err := r.keys.signer(ctx)
	if err != nil {
		return err
	}
	if err := signer.Sign(req, path, b, execsign.Target{App: app, Instance: instance, Address: addr}, r.cfg.Clock.Now()); err != nil {
		return err
	}
	tracing.Inject(ctx, propagation.HeaderCarrier(req.Header)) // the fire's trace, when traced
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == wire.StatusMisdirected {
		m := &MisdirectedError{Address: addr}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&m.Misdirected); err != nil {
			return fmt.Errorf("POST %s: a %d answer without its reason: %w", path, resp.StatusCode, err)
		}
		return m
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &wire.StatusError{Path: path, Status: resp.StatusCode, Body: string(bytes.TrimSpace(msg))}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("POST %s: decode the answer: %w", path, err)
	}
	return nil
}

// recordBatcher writes the dispatch records of concurrent fires in batches, a statement or
// two each (Store.ExecutionsRecordDispatches).
func recordBatcher(st store.Store) *groupcommit.Batcher[store.DispatchRecord, bool] {
	return &groupcommit.Batcher[store.DispatchRecord, bool]{Write: st.ExecutionsRecordDispatches}
}

// byTarget routes each fire by its job's target kind.
type byTarget struct {
	local, remote engine.Dispatcher
}

// ByTarget returns a dispatcher that runs remote jobs with remote and every other job with
// local.
func ByTarget(local, remote engine.Dispatcher) engine.Dispatcher { return byTarget{local, remote} }

func (d byTarget) Dispatch(ctx context.Context, f *engine.Fire) engine.Result {
	if f.Job.TargetKind == store.TargetRemote {
		return d.remote.Dispatch(ctx, f)
	}
	return d.local.Dispatch(ctx, f)
}

// paramsOf is engine.Fire.Params for a shard's execution.
func paramsOf(ex *store.Execution, job *store.Job) string {
	return (&engine.Fire{Execution: ex, Job: job}).Params()
}

// sentPolicy is the name of the job's overlap policy an executor is sent (jobrun.Policy.Sent).
func sentPolicy(job *store.Job) string {
	p, err := jobrun.ParsePolicy(string(job.Concurrency))
	if err != nil {
		return string(job.Concurrency) // the executor refuses it, naming it
	}
	return p.Sent()
}
