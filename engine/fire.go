package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/tracing"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// Causes a handler's context is canceled with; the execution's final state follows from them.
var (
	errTimedOut = errors.New("job timeout passed")
	errReplaced = errors.New("replaced by a newer fire (overlap policy cancel or terminate)")
	errStopping = errors.New("node stopping")
	errNotAlive = errors.New("the node could not confirm that the cluster still counts it alive")
)

// markRetryDelay is how long fires wait after the store failed to start them.
const markRetryDelay = 100 * time.Millisecond

// fireLoop releases acquired fires between one and two StartLeads before their due
// millisecond.
func (e *Engine) fireLoop(l *lifecycle) {
	for {
		var t clock.Timer
		if due, ok := l.fires.next(); ok {
			t = e.clock.NewTimerAt(due.Add(-e.cfg.StartLead))
		} else {
			t = e.clock.NewTimer(e.cfg.PollInterval)
		}
		select {
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-l.fires.changed:
		}
		t.Stop()
		if l.ctx.Err() != nil {
			return
		}
		// Release the fires of the next StartLead too: one claim then covers a lead's worth of
		// fires instead of a millisecond's.
		if due := l.fires.popDue(e.clock.Now().Add(2 * e.cfg.StartLead)); len(due) > 0 {
			select {
			case l.due <- due:
			case <-l.ctx.Done():
				return
			}
		}
	}
}

// startLoop starts the fires the firer released. While one compare-and-set is in flight the
// next fires gather, so under load one statement wins many fires and at rest a fire waits
// for no one: group commit without a timer. A batch starts at most BatchSize fires, fewer
// while batches take longer than batchTarget (batchsize.go): under overload the firer
// releases every late fire at once, and one claim of them all would start nothing until it
// ended; the rest wait here for the next batch.
func (e *Engine) startLoop(l *lifecycle) {
	sizer := newBatchSizer(e.cfg.BatchSize)
	var waiting []*pendingFire
	for {
		if len(waiting) == 0 {
			select {
			case waiting = <-l.due:
			case <-l.ctx.Done():
				return
			}
		}
	gather:
		for len(waiting) < sizer.size {
			select {
			case more := <-l.due:
				waiting = append(waiting, more...)
			default:
				break gather
			}
		}
		batch := waiting[:min(len(waiting), sizer.size):min(len(waiting), sizer.size)]
		waiting = waiting[len(batch):]
		l.fires.taken(len(batch))
		began := e.clock.Now()
		e.startFires(l, batch)
		sizer.next(len(batch), e.clock.Now().Sub(began))
		if l.ctx.Err() != nil {
			return
		}
	}
}

// startFires applies each job's concurrency policy, wins the fires with one
// acquired → running compare-and-set, and starts the winners' handlers.
func (e *Engine) startFires(l *lifecycle, due []*pendingFire) {
	batch, now := e.admitFires(l, due)
	if len(batch) == 0 {
		return
	}
	c, ok := e.claimAdmitted(l, batch, now)
	if !ok {
		return
	}
	late := now.Sub(time.UnixMilli(due[0].exec.ScheduledAt))
	e.stats.LateMs.Store(max(late.Milliseconds(), 0))
	e.log.Debug("started", "fires", len(c.won), "of", len(batch), "took", e.clock.Now().Sub(now), "late", late)
	e.recoverUnsure(l, batch, c)
	e.startClaimed(l, batch, c, now)
}

// admitted is a fire that passed its job's concurrency policy, to be claimed.
type admitted struct {
	fire   *Fire
	skip   bool
	why    string // why a skipped fire was skipped, when not for the discard policy
	unsure bool   // an earlier claim of it failed, and may have been applied all the same
}

// admitFires reads the fires' jobs and applies each job's concurrency policy: it returns the
// fires to claim (to run, or to record skipped) and the instant they are claimed at. Fires
// not due yet under a policy, queued or held behind a running fire are kept aside.
func (e *Engine) admitFires(l *lifecycle, due []*pendingFire) ([]admitted, time.Time) {
	ctx := l.ctx
	jobIDs := make([]int64, len(due))
	for i, pf := range due {
		jobIDs[i] = pf.exec.JobID
	}
	jobs, err := e.jobs.getMany(ctx, jobIDs)
	if err != nil {
		// The fires stay acquired; try them again shortly.
		if ctx.Err() == nil {
			e.log.Error("read the jobs of due fires; retrying", "err", err, "count", len(due))
			e.retryLater(l, due)
		}
		return nil, time.Time{}
	}
	inputs, err := e.workflowInputs(ctx, due)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("read the workflow inputs of due fires; retrying", "err", err, "count", len(due))
			e.retryLater(l, due)
		}
		return nil, time.Time{}
	}
	var batch []admitted
	now := e.clock.Now()
	seen := make(map[int64]bool, len(due))
	for _, pf := range due {
		if seen[pf.exec.ID] {
			continue // held twice (see fireQueue.push): the one claim would start it twice
		}
		seen[pf.exec.ID] = true
		job := jobs[pf.exec.JobID]
		if job != nil && job.Concurrency != store.ConcurrencyAllow && pf.due() > now.UnixMilli() {
			e.startWhenDue(l, pf)
			continue
		}
		f := e.fireOf(job, pf)
		f.WorkflowInput = inputs[pf.exec.WorkflowNode]
		nodeTimeout(f)
		if pf.missed != "" {
			batch = append(batch, admitted{fire: f, skip: true, why: pf.missed, unsure: pf.unsure})
			continue
		}
		if pf.admitted {
			batch = append(batch, admitted{fire: f, unsure: pf.unsure})
			continue
		}
		a, dropped := l.conc.admit(f)
		for _, d := range dropped {
			// Waited in the node's queue, displaced by this newer fire: claimed to be recorded.
			batch = append(batch, admitted{fire: e.fireOf(job, d), skip: true, unsure: d.unsure,
				why: fmt.Sprintf("skipped: a newer fire (%d) took its place (overlap policy %s)", f.Execution.ID, overlapOf(f.Job).Policy)})
		}
		switch a {
		case admitRun:
			batch = append(batch, admitted{fire: f, unsure: pf.unsure})
		case admitSkip:
			batch = append(batch, admitted{fire: f, skip: true, unsure: pf.unsure})
		case admitQueued:
			e.signals.fireQueued(f.Execution.ID)
		case admitHeld:
		}
	}
	return batch, now
}

// claimAdmitted wins the admitted fires (acquired → running) in one statement. When the
// claim fails it reports false, having disposed of the fires: retried as unsure shortly, or,
// when the node is stopping, recorded canceled in case the claim was applied after all.
func (e *Engine) claimAdmitted(l *lifecycle, batch []admitted, now time.Time) (claim, bool) {
	var (
		plain []int64
		alone []*Fire
	)
	for _, a := range batch {
		if !a.skip && a.fire.Execution.TriggerMsg == "" && runsAlone(a.fire.Job) {
			alone = append(alone, a.fire)
		} else {
			plain = append(plain, a.fire.Execution.ID)
		}
	}
	// A stop does not cut the claim short at once (see Stop). A claim that times out is
	// retried as unsure, like one whose answer was lost.
	claimCtx, cancelClaim := context.WithTimeout(l.claimCtx, storeTimeout)
	e.signals.claimSent(len(batch))
	c, err := e.claimFires(claimCtx, l.owner, plain, alone, l.conc.atMostRoom(alone), now.UnixMilli())
	cancelClaim()
	if err == nil {
		return c, true
	}
	if l.ctx.Err() != nil {
		// Stopping: if the claim was applied, its fires are running under this life with no
		// handler, and are recorded canceled; if not, they are released with the others.
		for _, a := range batch {
			l.completer.add(completion{fire: a.fire, state: store.ExecCanceled, started: now, finished: now,
				res: Result{Err: fmt.Errorf("%w before its claim was answered: %w", errStopping, err)}})
		}
		return c, false
	}
	// Nothing ran and the fires are still acquired by this node: try again shortly.
	e.log.Error("mark fires running; retrying", "err", err, "count", len(batch))
	retry := make([]*pendingFire, 0, len(batch))
	for _, a := range batch {
		if !a.skip {
			// The fires queued behind this one are retried with it, not forgotten.
			if next := l.conc.done(a.fire); next != nil {
				retry = append(retry, next)
			}
		}
		pf := requeued(a.fire)
		pf.unsure, pf.missed = true, a.why
		retry = append(retry, pf)
	}
	e.retryLater(l, retry)
	return c, false
}

// recoverUnsure counts as won the unsure fires this claim did not win that an earlier claim
// of this life won after all (its answer was lost).
func (e *Engine) recoverUnsure(l *lifecycle, batch []admitted, c claim) {
	for _, a := range batch {
		if id := a.fire.Execution.ID; !c.won[id] && a.unsure && e.claimedEarlier(l.ctx, l.owner, id) {
			c.won[id] = true
		}
	}
}

// startClaimed starts what the claim won: a handler per fire to run, a skipped or failed
// result for the others. A fire it lost waits for its job's run on another node, or is
// dropped as another node's; the queued fires whose turn came are started after.
func (e *Engine) startClaimed(l *lifecycle, batch []admitted, c claim, now time.Time) {
	var next []*pendingFire // queued fires whose turn came in this batch
	defer func() {
		if len(next) > 0 {
			e.startFires(l, next)
		}
	}()
	for _, a := range batch {
		ex := a.fire.Execution
		if !c.won[ex.ID] && c.busy[ex.ID] {
			e.waitBusy(l, a.fire) // its job runs on another node: its turn comes when that run ends
			continue
		}
		if !c.won[ex.ID] {
			// Another node took this fire (we were presumed dead): running it would be a
			// duplicate.
			e.stats.LostRaces.Add(1)
			e.signals.raceLost(ex.ID)
			if !a.skip {
				next = l.conc.appendDone(next, a.fire)
			}
			continue
		}
		ex.State, ex.FiredAt = store.ExecRunning, max(now.UnixMilli(), ex.ScheduledAt)
		e.stats.Fired.Add(1)
		e.signals.fireClaimed(ex.ID)
		switch {
		case a.skip:
			why := a.why
			if why == "" {
				why = "skipped: the previous fire of the job still runs (overlap policy skip)"
			}
			l.completer.add(completion{fire: a.fire, state: store.ExecSkipped, started: now,
				finished: now, res: Result{Message: why}})
		case c.discarded[ex.ID] != "":
			l.completer.add(completion{fire: a.fire, state: store.ExecSkipped, started: now,
				finished: now, res: Result{Message: c.discarded[ex.ID]}})
			next = l.conc.appendDone(next, a.fire)
		case ex.TriggerMsg != "":
			l.completer.add(completion{fire: a.fire, state: store.ExecFailed, started: now,
				finished: now, res: Result{Err: errors.New(ex.TriggerMsg)}})
			next = l.conc.appendDone(next, a.fire)
		default:
			e.launch(l, a.fire)
		}
	}
}

// fireOf is the fire of pf, with its job (nil when the job is gone: the fire runs nothing
// and is recorded failed with the reason).
func (e *Engine) fireOf(job *store.Job, pf *pendingFire) *Fire {
	if job == nil {
		job = &store.Job{ID: pf.exec.JobID, Concurrency: store.ConcurrencyAllow}
		pf.exec.TriggerMsg = fmt.Sprintf("job %d no longer exists", pf.exec.JobID)
	}
	if job.ParamsSecret || secret.Sealed(pf.exec.Params) {
		job = e.openParams(job, pf.exec)
	}
	f := &Fire{Execution: pf.exec, Job: withTriggerData(job, pf.exec), notBefore: pf.notBefore, acquiredAt: pf.acquiredAt}
	if f.Job != job {
		f.ownData, f.merged = job.Data, true
	}
	return f
}

// openParams returns a copy of a secret job with the params this fire runs with opened, for
// this run only: the cached job and the execution (which retries copy) keep them sealed. They
// are the run's own when it has some (a run-now's, sealed when given to a secret job), else
// the job's; the copy is marked secret, which Fire.Params and the executor go by. A fire
// whose params do not open (no key, or not the key that sealed them) fails with the reason
// instead of running with garbage.
func (e *Engine) openParams(job *store.Job, ex *store.Execution) *store.Job {
	params := runParams(job, ex)
	plain, err := params, error(nil)
	if secret.Sealed(params) {
		plain, err = e.cfg.Secrets.Open(params)
	}
	if err != nil {
		if ex.TriggerMsg == "" {
			ex.TriggerMsg = fmt.Sprintf("job %d: secret params: %v", job.ID, err)
		}
		e.log.Error("secret params do not open; the fire fails", "job", job.ID, "execution", ex.ID, "err", err)
		return job
	}
	cp := *job
	cp.Params, cp.ParamsSecret = plain, true
	return &cp
}

// claimedEarlier reports whether an execution whose claim failed is running for this life all
// the same: the failed statement was applied, and only its answer was lost. No other life can
// have made it so (it would have had to acquire it first), so the fire is this life's to run.
func (e *Engine) claimedEarlier(ctx context.Context, o store.Owner, id int64) bool {
	x, err := e.store.ExecutionGet(ctx, id)
	return err == nil && x.State == store.ExecRunning && store.OwnerOf(x) == o
}

// startWhenDue holds a fire that is not claimed ahead of its time (its job has a concurrency
// policy, judged when the fire is due) and hands it back to the starter at its millisecond.
func (e *Engine) startWhenDue(l *lifecycle, pf *pendingFire) {
	l.handlers.Add(1)
	go func() {
		defer l.handlers.Done()
		if !e.sleepUntil(l.ctx, time.UnixMilli(pf.due()), nil) {
			return // stopping: the fire stays acquired and is released with the others
		}
		l.fires.hold(1)
		select {
		case l.due <- []*pendingFire{pf}:
		case <-l.ctx.Done():
		}
	}()
}

// retryLater queues fires again after markRetryDelay, when the store failed to start them.
func (e *Engine) retryLater(l *lifecycle, fires []*pendingFire) {
	go func() {
		if e.sleep(l.ctx, markRetryDelay, nil) {
			l.fires.push(fires...)
		}
	}()
}

// launch runs the fire's handler on its own goroutine once a MaxRunning slot is free.
func (e *Engine) launch(l *lifecycle, f *Fire) {
	// A claim that wins while the node stops (it was in flight when Stop began) runs in the
	// drain without a slot: the claim made the fire running in the store, so no other node
	// will take it, and neither cancelling it (a fire lost to a graceful stop) nor waiting
	// for a slot (which holds the claim loop, and so the stop, until the drain budget is
	// spent) would do. The excess over MaxRunning is one claim round's winners at most.
	slot := e.takeSlot(l)
	l.handlers.Add(1)
	go func() {
		defer l.handlers.Done()
		if slot {
			defer func() { <-l.slots }()
		}
		// A fire claimed StartLead ahead waits for its millisecond. A stop does not cut the
		// wait short: the fire is claimed, and the drain runs it like one already running.
		if due := time.UnixMilli(max(f.Execution.ScheduledAt, f.notBefore)); e.clock.Now().Before(due) {
			e.sleepUntil(l.runCtx, due, nil)
		}
		// The claim was this life's, but the life may have been frozen since, past the node
		// timeout, and the fire declared lost and given away: run it only while the life
		// holds its lease (see fence).
		if !l.fence.hold(l.runCtx, e.clock) {
			now := e.clock.Now()
			l.completer.add(completion{fire: f, state: store.ExecCanceled, started: now, finished: now,
				res: Result{Err: errNotAlive}})
			l.conc.done(f)
			return
		}
		e.run(l, f)
	}()
}

// takeSlot waits for a MaxRunning slot while the node runs; it reports false, at once, when
// the node is stopping.
func (e *Engine) takeSlot(l *lifecycle) bool {
	if l.ctx.Err() != nil {
		return false
	}
	select {
	case l.slots <- struct{}{}:
		return true
	case <-l.ctx.Done():
		return false
	}
}

func (e *Engine) run(l *lifecycle, f *Fire) {
	ctx, cancel := context.WithCancelCause(l.runCtx)
	defer cancel(nil)
	l.conc.running(f, cancel)
	// The job's timeout bounds its handler. A remote job's handler runs on its executor,
	// which times it out (the run request carries the timeout); here only its dispatch runs,
	// which a timer of the job's would cut short under load, recording a run timed out that
	// no handler began, or one the executor had taken.
	if f.Job.TimeoutMs > 0 && f.Job.TargetKind != store.TargetRemote {
		t := e.clock.NewTimer(msDuration(f.Job.TimeoutMs))
		defer t.Stop()
		go func() {
			select {
			case <-t.C():
				cancel(errTimedOut)
			case <-ctx.Done():
			}
		}()
	}
	started := e.clock.Now()
	runCtx, span := ctx, trace.Span(nil)
	if e.cfg.tracer != nil {
		runCtx, f.span = e.cfg.tracer.StartFire(ctx, traceFire(f), f.acquiredAt, started)
		runCtx, span = e.cfg.tracer.StartRun(runCtx, f.Job.TargetKind == store.TargetRemote)
	}
	res := e.dispatch(runCtx, f)
	if err := checkResult(res.Return); err != nil && res.Err == nil {
		res.Err, res.Return = err, nil
	}
	finished := e.clock.Now()
	if span != nil {
		tracing.End(span, "", res.Err, finished)
	}
	if res.Async && res.Err == nil {
		// Handed over: the executor reports the outcome through CompleteRemote, which traces
		// the write under the executor's span. This node's part of the fire ends here.
		tracing.End(f.span, "dispatched", nil, finished)
		if next := l.conc.done(f); next != nil {
			e.startFires(l, []*pendingFire{next})
		}
		return
	}

	state := store.ExecSucceeded
	if res.Err != nil {
		state = store.ExecFailed
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimedOut):
		state = store.ExecTimedOut
	case errors.Is(cause, errReplaced):
		state = store.ExecCanceled
	case errors.Is(cause, errKilled):
		state = store.ExecCanceled
		res.Message = strings.TrimSpace("killed " + res.Message)
	case l.runCtx.Err() != nil && res.Err != nil:
		state = store.ExecCanceled
	}
	l.completer.add(completion{fire: f, state: state, res: res, started: started, finished: finished})
	if next := l.conc.done(f); next != nil {
		e.startFires(l, []*pendingFire{next})
	}
}

// dispatch runs the handler and turns a panic into a failure, so one bad handler cannot take
// the node down.
func (e *Engine) dispatch(ctx context.Context, f *Fire) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("handler panicked", "job", f.Job.ID, "execution", f.Execution.ID, "panic", p)
			res = Result{Err: fmt.Errorf("handler panicked: %v", p), Logs: []string{string(debug.Stack())}}
		}
	}()
	return e.cfg.Dispatcher.Dispatch(ctx, f)
}

// traceFire is what the fire's trace says of it.
func traceFire(f *Fire) tracing.Fire {
	return tracing.Fire{ExecutionID: f.Execution.ID, JobID: f.Job.ID, Job: f.Job.Group + "/" + f.Job.Name, Handler: f.Job.Handler,
		Kind: string(f.Job.TargetKind), Attempt: f.Execution.Attempt, ScheduledAt: f.Execution.ScheduledAt}
}
