package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
		OutputLost: x.OutputLost}
}

// listExecutions lists executions newest first (order=asc for oldest first), filtered by job,
// app, state, cause, executor address, alarm state and a fired-at range. With a range, the
// list is in fired-at order and holds fired executions only.
func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	f := store.ExecutionFilter{Limit: limit + 1, Desc: true, Scope: principalFrom(r.Context()).ReadScope()}
	if f.AfterID, err = queryID(r, "after"); err != nil {
		return err
	}
	if f.JobID, err = queryID(r, "job_id"); err != nil {
		return err
	}
	f.App = q.Get("app")
	if c := q.Get("cause"); c != "" {
		if !store.ExecutionCause(c).Valid() {
			return invalidField("cause", "want one of %s, got %q", strings.Join(store.Words(store.ExecutionCauses), ", "), c)
		}
		f.Cause = store.ExecutionCause(c)
	}
	if st := q.Get("state"); st != "" {
		if !store.ExecutionState(st).Valid() {
			return invalidField("state", "want one of %s, got %q", strings.Join(store.Words(store.ExecutionStates), ", "), st)
		}
		f.State = store.ExecutionState(st)
	}
	f.ExecutorAddress = q.Get("executor")
	if st := q.Get("alarm_state"); st != "" {
		if !store.AlarmState(st).Valid() {
			return invalidField("alarm_state", "want one of %s, got %q", strings.Join(store.Words(store.AlarmStates), ", "), st)
		}
		f.AlarmState = store.AlarmState(st)
	}
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		f.Desc = false
	default:
		return invalidField("order", "want asc or desc, got %q", o)
	}
	for _, b := range []struct {
		name string
		dst  *int64
	}{{"from", &f.FiredFrom}, {"to", &f.FiredTo}} {
		if v := q.Get(b.name); v != "" {
			t, err := parseTime(b.name, v)
			if err != nil {
				return err
			}
			*b.dst = t.UnixMilli()
		}
	}
	if f.FiredFrom != 0 && f.FiredTo != 0 && f.FiredTo <= f.FiredFrom {
		return invalidField("to", "must be after from")
	}
	xs, err := s.store.ExecutionList(r.Context(), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(xs, limit, func(x *store.Execution) string { return strconv.FormatInt(x.ID, 10) }, toExecutionOut))
	return nil
}

func (s *Server) getExecution(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	x, err := s.store.ExecutionGet(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toExecutionOut(x))
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
	x, err := s.store.ExecutionGet(r.Context(), id)
	if err != nil {
		return err
	}
	if f := r.URL.Query().Get("follow"); f == "true" || f == "1" {
		return s.followOutput(w, r, x, after)
	}
	lines, err := s.store.ExecutionLogList(r.Context(), id, after, limit+1)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(lines, limit, func(l store.LogLine) string { return strconv.FormatInt(l.Line, 10) }, toLogLineOut))
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

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) error {
	ns, err := s.store.NodeList(r.Context())
	if err != nil {
		return err
	}
	// Heartbeats and the leader's lease are stamped by the database's clock: judged by it too.
	now, err := s.store.DBNow(r.Context())
	if err != nil {
		return err
	}
	leader := ""
	if l, err := s.store.LeaseGet(r.Context(), "leader"); err == nil && l.ExpiresAt > now {
		leader = l.Holder
	}
	eng := s.sched.Engine()
	self, timeout := eng.NodeID(), eng.NodeTimeout().Milliseconds()
	items := make([]api.Node, len(ns))
	for i, n := range ns {
		items[i] = api.Node{ID: n.ID, Name: n.Name, StartedAt: api.Time(n.StartedAt), LastSeen: api.Time(n.LastSeen),
			Leader: n.ID == leader, Self: n.ID == self, Live: now-n.LastSeen < timeout}
	}
	out, err := pageOf(r, items, func(n api.Node) string { return n.ID })
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
