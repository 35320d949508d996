package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

func toExecutionOut(x *store.Execution) api.Execution {
	return api.Execution{ID: x.ID, JobID: x.JobID, TriggerID: x.TriggerID, ScheduledAt: api.Time(x.ScheduledAt),
		FiredAt: api.Time(x.FiredAt), Cause: string(x.Cause), Attempt: x.Attempt, Node: x.Node, State: string(x.State),
		HandleCode: x.HandleCode, HandleMsg: x.HandleMsg, TriggerMsg: x.TriggerMsg, StartedAt: api.Time(x.StartedAt),
		FinishedAt: api.Time(x.FinishedAt), ExecutorAddress: x.ExecutorAddress, ShardIndex: x.ShardIndex, ShardTotal: x.ShardTotal,
		AlarmState: string(x.AlarmState), ScriptVersion: x.ScriptVersion, Params: secret.Shown(x.Params),
		OutputLost: x.OutputLost, IntervalStart: api.Time(x.IntervalStart), IntervalEnd: api.Time(x.IntervalEnd), BackfillID: x.BackfillID, FireZone: x.FireZone}
}

// hideSecretParams masks the params of the executions of jobs whose params are secret. Such
// a job's run-now params are sealed when stored (sundial's runParams), which toExecutionOut
// masks anyway; rows stored before that, or before the job's params became secret, hold them
// in clear, and they leave the server no more than a sealed one. The job of a run must be
// read for that (its row is the one that says), a page's jobs in one call.
func (s *Server) hideSecretParams(ctx context.Context, xs ...*store.Execution) error {
	inClear := func(x *store.Execution) bool { return x != nil && x.Params != "" && !secret.Sealed(x.Params) }
	var ids []int64
	for _, x := range xs {
		if inClear(x) && !slices.Contains(ids, x.JobID) {
			ids = append(ids, x.JobID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	jobs, err := s.store.JobsGet(ctx, ids)
	if err != nil {
		return fmt.Errorf("jobs of executions with params: %w", err)
	}
	secretJob := map[int64]bool{}
	for _, j := range jobs {
		secretJob[j.ID] = j.ParamsSecret
	}
	for _, x := range xs {
		if inClear(x) && secretJob[x.JobID] {
			x.Params = secret.Mask
		}
	}
	return nil
}

// hidingSecretParams is op, its execution's params hidden as hideSecretParams does.
func hidingSecretParams[Req any](s *Server, op func(context.Context, *Req) (*store.Execution, error)) func(context.Context, *Req) (*store.Execution, error) {
	return func(ctx context.Context, in *Req) (*store.Execution, error) {
		x, err := op(ctx, in)
		if err != nil || x == nil {
			return x, err
		}
		return x, s.hideSecretParams(ctx, x)
	}
}

// ExecutionQuery is a filter and page of the execution list.
type ExecutionQuery struct {
	JobID      int64  `json:"job_id"`
	App        string `json:"app"`
	Cause      string `json:"cause"`
	State      string `json:"state"`
	Executor   string `json:"executor"`
	AlarmState string `json:"alarm_state"`
	// Asc lists oldest first.
	Asc bool `json:"-"`
	// From and To bound the fired time (zero: no bound); with either, the list is in fired-at
	// order and holds fired executions only.
	From, To time.Time `json:"-"`
	After    int64     `json:"after"`
	Limit    int       `json:"limit"`
}

// ExecutionPage is a page of executions; More says another follows the last.
type ExecutionPage struct {
	Executions []*store.Execution
	More       bool
}

// ExecutionRef names an execution by its id.
type ExecutionRef struct {
	ID int64 `json:"-"`
}

// OutputQuery is a page of an execution's output lines after line After.
type OutputQuery struct {
	ID    int64 `json:"-"`
	After int64 `json:"after"`
	Limit int   `json:"limit"`
}

// OutputPage is a page of output lines; More says another follows the last.
type OutputPage struct {
	Lines []store.LogLine
	More  bool
}

// listExecutions lists executions newest first (oldest first with Asc), filtered by job,
// app, state, cause, executor address, alarm state and a fired-at range. With a range, the
// list is in fired-at order and holds fired executions only.
func (s *Server) listExecutions(ctx context.Context, in *ExecutionQuery) (*ExecutionPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	f := store.ExecutionFilter{Limit: limit + 1, Desc: !in.Asc, Scope: principalFrom(ctx).ReadScope(),
		AfterID: in.After, JobID: in.JobID, App: in.App, ExecutorAddress: in.Executor}
	if c := in.Cause; c != "" {
		if !store.ExecutionCause(c).Valid() {
			return nil, invalidField("cause", "want one of %s, got %q", strings.Join(store.Words(store.ExecutionCauses), ", "), c)
		}
		f.Cause = store.ExecutionCause(c)
	}
	if st := in.State; st != "" {
		if !store.ExecutionState(st).Valid() {
			return nil, invalidField("state", "want one of %s, got %q", strings.Join(store.Words(store.ExecutionStates), ", "), st)
		}
		f.State = store.ExecutionState(st)
	}
	if st := in.AlarmState; st != "" {
		if !store.AlarmState(st).Valid() {
			return nil, invalidField("alarm_state", "want one of %s, got %q", strings.Join(store.Words(store.AlarmStates), ", "), st)
		}
		f.AlarmState = store.AlarmState(st)
	}
	if !in.From.IsZero() {
		f.FiredFrom = in.From.UnixMilli()
	}
	if !in.To.IsZero() {
		f.FiredTo = in.To.UnixMilli()
	}
	if f.FiredFrom != 0 && f.FiredTo != 0 && f.FiredTo <= f.FiredFrom {
		return nil, invalidField("to", "must be after from")
	}
	xs, err := s.store.ExecutionList(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &ExecutionPage{}
	page.Executions, page.More = cut(xs, limit)
	return page, s.hideSecretParams(ctx, page.Executions...)
}

func (s *Server) getExecution(ctx context.Context, in *ExecutionRef) (*store.Execution, error) {
	return s.store.ExecutionGet(ctx, in.ID)
}

// executionLines is a page of an execution's output.
func (s *Server) executionLines(ctx context.Context, in *OutputQuery) (*OutputPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	if _, err := s.store.ExecutionGet(ctx, in.ID); err != nil {
		return nil, err
	}
	lines, err := s.store.ExecutionLogList(ctx, in.ID, in.After, limit+1)
	if err != nil {
		return nil, err
	}
	page := &OutputPage{}
	page.Lines, page.More = cut(lines, limit)
	return page, nil
}

// attempts finds the executions of x's fire (same job, trigger, scheduled time and shard),
// whose attempts number them, in order: retries link to each other through these.
func (s *Server) attempts(ctx context.Context, in *ExecutionRef) (*[]*store.Execution, error) {
	x, err := s.store.ExecutionGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	// Retries are newer executions of the job, earlier attempts older ones.
	newer, err := s.store.ExecutionList(ctx, store.ExecutionFilter{JobID: x.JobID, AfterID: x.ID, Limit: 200})
	if err != nil {
		return nil, err
	}
	var older []*store.Execution
	if x.Attempt > 0 {
		if older, err = s.store.ExecutionList(ctx, store.ExecutionFilter{JobID: x.JobID, AfterID: x.ID, Desc: true,
			Limit: 200}); err != nil {
			return nil, err
		}
	}
	// No column links a retry to the run it retries: a retry is the next attempt of the same
	// trigger and shard that comes after it (cause retry), so the chain is walked that way.
	var chain []*store.Execution
	cur := x
	for _, y := range older { // newest first
		if y.Attempt == cur.Attempt-1 && y.TriggerID == cur.TriggerID && y.ShardIndex == cur.ShardIndex {
			chain = append([]*store.Execution{y}, chain...)
			if cur = y; cur.Attempt == 0 {
				break
			}
		}
	}
	chain = append(chain, x)
	cur = x
	for _, y := range newer { // oldest first
		if y.Cause == store.CauseRetry && y.Attempt == cur.Attempt+1 && y.TriggerID == cur.TriggerID && y.ShardIndex == cur.ShardIndex {
			chain = append(chain, y)
			cur = y
		}
	}
	return &chain, s.hideSecretParams(ctx, chain...)
}

// The executions' HTTP binding.

func readExecutionQuery(r *http.Request, in *ExecutionQuery) (err error) {
	q := r.URL.Query()
	if in.Limit, in.After, err = idPage(r); err != nil {
		return err
	}
	if in.JobID, err = queryID(r, "job_id"); err != nil {
		return err
	}
	in.App, in.Cause, in.State, in.Executor, in.AlarmState = q.Get("app"), q.Get("cause"), q.Get("state"), q.Get("executor"), q.Get("alarm_state")
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		in.Asc = true
	default:
		return invalidField("order", "want asc or desc, got %q", o)
	}
	if in.From, err = parseTime("from", q.Get("from")); err != nil {
		return err
	}
	in.To, err = parseTime("to", q.Get("to"))
	return err
}

func readExecutionRef(r *http.Request, in *ExecutionRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

func writeExecutionPage(w http.ResponseWriter, _ *http.Request, p *ExecutionPage) error {
	writeJSON(w, http.StatusOK, pageOut(p.Executions, p.More, func(x *store.Execution) string { return strconv.FormatInt(x.ID, 10) }, toExecutionOut))
	return nil
}

func toLogLineOut(l store.LogLine) api.LogLine {
	return api.LogLine{Line: l.Line, At: api.Time(l.At), Message: l.Message}
}

// executionOutput returns an execution's output lines after ?after= (a line number); with
// ?follow=true it streams them as server-sent events until the execution ends.
func (s *Server) executionOutput(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	limit, after, err := idPage(r)
	if err != nil {
		return err
	}
	if f := r.URL.Query().Get("follow"); f == "true" || f == "1" {
		x, err := s.store.ExecutionGet(r.Context(), id)
		if err != nil {
			return err
		}
		return s.followOutput(w, r, x, after)
	}
	p, err := s.ops.ExecutionOutput.Execute(r.Context(), &OutputQuery{ID: id, After: after, Limit: limit})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pageOut(p.Lines, p.More, func(l store.LogLine) string { return strconv.FormatInt(l.Line, 10) }, toLogLineOut))
	return nil
}

// followPoll is how often a follow stream looks for new lines. Lines are written when a run
// completes (and by executors in chunks), so polling the indexed log table is cheap enough.
const followPoll = 500 * time.Millisecond

// followOutput streams "line" events (a api.LogLine each, with the line number as the event
// id, so a reconnecting client resumes with Last-Event-ID) and a final "end" event carrying
// the execution once it is terminal and its lines are sent.
func (s *Server) followOutput(w http.ResponseWriter, r *http.Request, x *store.Execution, after int64) error {
	fl, ok := w.(http.Flusher)
	if !ok {
		return fmt.Errorf("follow output: the connection cannot stream")
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > after {
			after = n
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// The stream lasts as long as its run: the server's write timeout is for answers.
	httpserve.NoWriteDeadline(w)
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	ctx := r.Context()
	send := func(event, id string, v any) error {
		b, _ := json.Marshal(v) // plain structs cannot fail to encode
		if id != "" {
			if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		fl.Flush()
		return err
	}
	tick := s.clock.NewTimer(followPoll)
	defer tick.Stop()
	for {
		done := x.State.Terminal()
		for {
			lines, err := s.store.ExecutionLogList(ctx, x.ID, after, maxPageSize)
			if err != nil {
				return s.endStream(ctx, err)
			}
			for _, l := range lines {
				if err := send("line", strconv.FormatInt(l.Line, 10), toLogLineOut(l)); err != nil {
					return nil // the client went away
				}
				after = l.Line
			}
			if len(lines) < maxPageSize {
				break
			}
		}
		// The state was read before the lines, so lines stored with the completion are sent.
		if done {
			if err := s.hideSecretParams(ctx, x); err != nil {
				return s.endStream(ctx, err)
			}
			_ = send("end", "", toExecutionOut(x))
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-tick.C():
			tick.Reset(followPoll)
		}
		var err error
		if x, err = s.store.ExecutionGet(ctx, x.ID); err != nil {
			return s.endStream(ctx, err)
		}
	}
}

// endStream logs a stream's failure: the status line is sent, so the client only sees the
// stream end.
func (s *Server) endStream(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		s.log.Warn("output stream ended", "err", err)
	}
	return nil
}

func (s *Server) listNodes(ctx context.Context, _ *AllOf) (*[]api.Node, error) {
	ns, err := s.store.NodeList(ctx)
	if err != nil {
		return nil, err
	}
	// Heartbeats and the leader's lease are stamped by the database's clock: judged by it too.
	now, err := s.store.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	leader := ""
	if l, err := s.store.LeaseGet(ctx, "leader"); err == nil && l.ExpiresAt > now {
		leader = l.Holder
	}
	eng := s.sched.Engine()
	self, timeout := eng.NodeID(), eng.NodeTimeout().Milliseconds()
	items := make([]api.Node, len(ns))
	for i, n := range ns {
		items[i] = api.Node{ID: n.ID, Name: n.Name, StartedAt: api.Time(n.StartedAt), LastSeen: api.Time(n.LastSeen),
			Leader: n.ID == leader, Self: n.ID == self, Live: now-n.LastSeen < timeout}
		if items[i].Self {
			load := &api.NodeLoad{LateMs: eng.Stats().LateMs.Load(), Backlog: eng.Backlog(), HeartbeatAgeMs: -1}
			if age, ok := eng.HeartbeatAge(); ok {
				load.HeartbeatAgeMs = age.Milliseconds()
			}
			items[i].Load = load
		}
	}
	return &items, nil
}
