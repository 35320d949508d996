package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// Dispatch to XXL-JOB executors (apps with protocol xxl-job): the same routing and sharding
// as for native executors (Dispatch picks the addresses, the router the instance), then the
// run goes out as an XXL-JOB trigger of the app's generation. The execution id is the
// trigger's logId and its fired_at the logDateTime, so the executor's callback and its log
// file name the execution. Output is pulled from the executor's /log while the run is live
// (this node's follower) and once more when its result arrives (FinalXXLOutput).

// XXLBeatInterval is how often XXL-JOB executors register (their BEAT_TIMEOUT): an instance
// silent for LiveIntervals of them is gone, as in XXL-JOB (90 s).
const XXLBeatInterval = 30 * time.Second

// DefaultXXLLogInterval is how often a live run's output is pulled from its executor.
const DefaultXXLLogInterval = time.Second

// XXLClient is the client for the app's executors: its generation, name and access token
// (opened with the server's secret key). It fails for an app that is not xxl-job or whose
// token cannot be read.
func (r *Remote) XXLClient(app *store.App) (*xxljob.Client, error) {
	if app == nil || app.Protocol != store.ProtocolXXLJob {
		return nil, fmt.Errorf("app is not an xxl-job app")
	}
	if app.XXLTokenSealed == "" {
		return nil, fmt.Errorf("xxl-job app %q has no access token set (sundial app update %s --xxl-token-file …)", app.Name, app.Name)
	}
	token, err := r.cfg.Secrets.OpenFor(app.XXLTokenSealed, app.Name)
	if err != nil {
		return nil, fmt.Errorf("xxl-job app %q: read its access token: %w", app.Name, err)
	}
	return &xxljob.Client{HTTP: r.cfg.Client, Gen: xxljob.Generation(app.ProtocolVersion), Token: token, AppName: app.Name}, nil
}

// xxlProber answers the failover and busy-over probes with XXL-JOB's beat and idleBeat, so
// the router's strategies apply unchanged.
type xxlProber struct{ c *xxljob.Client }

func (p xxlProber) beat(ctx context.Context, addr string) error { return p.c.Beat(ctx, addr) }

func (p xxlProber) idleBeat(ctx context.Context, addr string, jobID int64) (bool, error) {
	return p.c.IdleBeat(ctx, addr, jobID)
}

// triggerParam maps the job onto XXL-JOB's trigger: a script job (xxljob.GlueType) sends
// its script as the glue source, stamped with its newest script version's time so the
// executor rebuilds its script file when the script changed.
//
// A workflow node's run (input not "") sends its workflow input as the job param, the one
// string an XXL-JOB handler is given: {"run_id", "node", "params", "parents", ...}, with the
// job's own params as "job_params" when it has any.
func (r *Remote) triggerParam(ctx context.Context, ex *store.Execution, job *store.Job, index, total int, input string) (xxljob.TriggerParam, error) {
	params := paramsOf(ex, job)
	if input != "" {
		own := params
		if xxljob.GlueType(job.Handler) != xxljob.GlueBean {
			own = "" // a script job's params are its script
		}
		var err error
		if params, err = xxlWorkflowParam(input, own); err != nil {
			return xxljob.TriggerParam{}, fmt.Errorf("execution %d: %w", ex.ID, err)
		}
	}
	p := xxljob.TriggerParam{JobID: job.ID, ExecutorHandler: job.Handler, ExecutorParams: params,
		ExecutorBlockStrategy: xxljob.BlockStrategy(string(job.Concurrency)), ExecutorTimeout: xxljob.TimeoutSeconds(job.TimeoutMs),
		LogID: ex.ID, LogDateTime: ex.FiredAt, GlueType: xxljob.GlueType(job.Handler), BroadcastIndex: index, BroadcastTotal: total}
	if p.GlueType == xxljob.GlueBean {
		return p, nil
	}
	// A script's params are its script; a workflow node's script still gets its input.
	scriptParam := ""
	if input != "" {
		scriptParam = p.ExecutorParams
	}
	p.ExecutorHandler, p.ExecutorParams, p.GlueSource, p.GlueUpdatetime = "", scriptParam, job.Params, job.UpdatedAt
	vs, err := r.cfg.Store.ScriptVersionList(ctx, job.ID)
	if err != nil {
		return p, fmt.Errorf("job %d: script versions: %w", job.ID, err)
	}
	if len(vs) > 0 {
		p.GlueUpdatetime = vs[0].CreatedAt
	}
	return p, nil
}

// sendXXL is send for an XXL-JOB executor: record the dispatch, post the trigger, record the
// acceptance, follow the output. A trigger is not repeated when no answer comes: an XXL-JOB
// executor would run it twice (it forgets a log id once the run left its queue).
func (r *Remote) sendXXL(ctx context.Context, ex *store.Execution, job *store.Job, addr string, index, total int, xc *xxljob.Client, input string) engine.Result {
	msg := fmt.Sprintf("sent to %s (XXL-JOB %s)", addr, xc.Gen)
	if total > 1 {
		msg = fmt.Sprintf("shard %d/%d sent to %s (XXL-JOB %s)", index, total, addr, xc.Gen)
	}
	param, err := r.triggerParam(ctx, ex, job, index, total, input)
	if err != nil {
		return engine.Result{Err: err}
	}
	owner := store.OwnerOf(ex)
	ours, err := r.setDispatch(ctx, job, owner, ex.ID, addr, "", index, total, msg)
	if err != nil {
		return engine.Result{Err: err}
	}
	if !ours {
		r.stats.NotOwned.Add(1)
		return engine.Result{Err: fmt.Errorf("execution %d is no longer running for node %s (incarnation %s): not sent", ex.ID, owner.Node, owner.Incarnation)}
	}
	if err := xc.Run(ctx, addr, param); err != nil {
		if re := (*xxljob.RefusedError)(nil); errors.As(err, &re) {
			r.stats.Refused.Add(1)
			return engine.Result{Err: fmt.Errorf("XXL-JOB executor %s refused execution %d: %s", addr, ex.ID, re.Msg)}
		}
		if notTaken(err) {
			return engine.Result{Err: fmt.Errorf("XXL-JOB executor %s did not take execution %d: %w: %w", addr, ex.ID, errNotTaken, err)}
		}
		r.stats.Unreachable.Add(1)
		return engine.Result{Err: fmt.Errorf("XXL-JOB executor %s did not take execution %d: %w", addr, ex.ID, err)}
	}
	r.accepted(ctx, owner, ex.ID)
	r.follow(ex.ID, ex.FiredAt, addr, xc)
	return engine.Result{Async: true, Message: msg}
}

// follow pulls the run's output every XXLLogInterval while it runs on addr. It stops when the
// run ends (the result's own pull, FinalXXLOutput, reads the rest) or the dispatcher closes.
func (r *Remote) follow(id, logDate int64, addr string, xc *xxljob.Client) {
	r.followers.Add(1)
	go func() {
		defer r.followers.Done()
		from := 1
		for {
			t := r.cfg.Clock.NewTimer(r.cfg.XXLLogInterval)
			select {
			case <-r.closing:
				t.Stop()
				return
			case <-t.C():
			}
			d, err := r.cfg.Store.ExecutionDispatchedTo(r.ctx, id)
			if errors.Is(err, store.ErrNotFound) || (err == nil && d.Address != addr) {
				return
			}
			if err != nil {
				r.cfg.Logger.Warn("following the output of an XXL-JOB run", "execution", id, "err", err)
				continue
			}
			if from, err = r.pullXXL(r.ctx, xc, addr, id, logDate, from); err != nil {
				r.cfg.Logger.Debug("pulling the output of an XXL-JOB run", "execution", id, "executor", addr, "err", err)
			}
		}
	}()
}

// pullXXL reads the run's log from line from to its end so far and stores the lines under
// their own numbers (so a line pulled twice is stored once); it returns the next line to ask
// for.
func (r *Remote) pullXXL(ctx context.Context, xc *xxljob.Client, addr string, id, logDate int64, from int) (int, error) {
	res, err := xc.Log(ctx, addr, id, logDate, from)
	if err != nil {
		return from, err
	}
	lines := res.Lines()
	if len(lines) == 0 {
		return from, nil
	}
	now := r.cfg.Clock.Now().UnixMilli()
	out := make([]store.LogLine, len(lines))
	for i, l := range lines {
		out[i] = store.LogLine{Line: int64(res.FromLineNum + i), At: now, Message: l}
	}
	if _, err := r.cfg.Store.ExecutionLogAppend(ctx, id, out); err != nil {
		return from, fmt.Errorf("store the output of execution %d: %w", id, err)
	}
	return res.FromLineNum + len(lines), nil
}

// FinalXXLOutput pulls the whole output of a run that is ending on the XXL-JOB executor at
// addr, before its result is recorded, so that whoever follows the output sees every line
// before the end.
func (r *Remote) FinalXXLOutput(ctx context.Context, xc *xxljob.Client, addr string, id, logDate int64) error {
	_, err := r.pullXXL(ctx, xc, addr, id, logDate, 1)
	return err
}

// KillExecution stops the running remote execution x on its executor. For an XXL-JOB
// executor, whose kill stops the job's whole thread, the run is pulled once more and
// completed canceled here: the executor's own "killed" callback then finds it ended. It
// reports whether the executor had the run (for XXL-JOB: always, it cannot say).
func (r *Remote) KillExecution(ctx context.Context, x *store.Execution) (bool, error) {
	job, err := r.cfg.Store.JobGet(ctx, x.JobID)
	if err != nil {
		return false, err
	}
	app, err := r.cfg.Store.AppGet(ctx, job.App)
	if errors.Is(err, store.ErrNotFound) || (err == nil && app.Protocol != store.ProtocolXXLJob) {
		return r.killNative(ctx, x.ID)
	}
	if err != nil {
		return false, err
	}
	xc, err := r.XXLClient(app)
	if err != nil {
		return false, err
	}
	msg, err := xc.Kill(ctx, x.ExecutorAddress, job.ID)
	if err != nil {
		return false, err
	}
	if err := r.FinalXXLOutput(ctx, xc, x.ExecutorAddress, x.ID, x.FiredAt); err != nil {
		r.cfg.Logger.Warn("pulling the output of a killed XXL-JOB run", "execution", x.ID, "err", err)
	}
	if r.complete != nil {
		now := r.cfg.Clock.Now()
		if msg == "" {
			msg = "job thread stopped"
		}
		if _, err := r.complete(ctx, []engine.RemoteResult{{ExecutionID: x.ID, State: store.ExecCanceled, Code: xxljob.CodeFail,
			Message: fmt.Sprintf("killed: the XXL-JOB executor %s stopped job %d's thread (%s)", x.ExecutorAddress, job.ID, msg),
			Started: time.UnixMilli(x.FiredAt), Finished: now}}); err != nil {
			return true, fmt.Errorf("kill execution %d: %w", x.ID, err)
		}
	}
	return true, nil
}

// xxlWorkflowParam is a workflow node's XXL-JOB job param: its workflow input, and the job's
// params (for a script job, none: its params are its script) as job_params.
func xxlWorkflowParam(input, jobParams string) (string, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("workflow input: %w", err)
	}
	if jobParams != "" {
		b, _ := json.Marshal(jobParams)
		in["job_params"] = b
	}
	out, err := json.Marshal(in)
	return string(out), err
}
