package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// Map/reduce for executors (docs/executor-protocol.md, "Map/reduce"). The sub-tasks of a
// remote handler are stored under a key that names the job's app (remoteMapKey), so a claim,
// which asks for handlers by name, takes only its own app's sub-tasks; attempts are owned by
// the proven instance that claimed them, so a result is accepted (compare-and-set on state,
// attempt and owner: the store's rule, as in process) only from that instance. The job policy
// (retries, the map limits, the completion of a reduced run) is the in-process runner's:
// sundial.Scheduler.MapSubtasks, store.Subtasks and engine.CompleteReduce.

const remoteMapPrefix = "executor:"

// remoteMapKey is the handler key of app's remote handler h in the sub-task rows.
func remoteMapKey(app, h string) string { return remoteMapPrefix + app + ":" + h }

// remoteHandler is the handler name in key when key is app's (remoteMapKey), and false else.
func remoteHandler(app, key string) (string, bool) {
	return strings.CutPrefix(key, remoteMapKey(app, ""))
}

// subtaskOwner is the owner the request's proven instance claims sub-tasks as; a request that
// names no instance has none (an attempt must be bound to a process whose death releases it).
func subtaskOwner(from sender) (string, error) {
	if from.instance == "" {
		return "", invalidField("instance", "map/reduce calls come from an executor instance (the %s header and its proof)", wire.HeaderInstance)
	}
	return engine.ExecutorSubtaskOwner(from.instance), nil
}

func (s *Server) wrongAppMap(from sender, id int64) error {
	s.rejected.WithLabelValues(rejectWrongApp).Inc()
	s.log.Warn("refused an executor's map/reduce call about another app's run", "execution_id", id, "app", from.app, "instance", from.instance)
	return &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Message: fmt.Sprintf("the sub-tasks of execution %d belong to another app than %q", id, from.app)}
}

func (s *Server) executorSubtasksMap(w http.ResponseWriter, r *http.Request) error {
	var in api.MapRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	from := senderOf(r)
	owner, err := subtaskOwner(from)
	if err != nil {
		return err
	}
	switch {
	case in.ExecutionID <= 0:
		return invalidField("execution_id", "must be positive, got %d", in.ExecutionID)
	case in.ParentID < 0:
		return invalidField("parent_id", "must not be negative, got %d", in.ParentID)
	case in.Seq < 0:
		return invalidField("seq", "must not be negative, got %d", in.Seq)
	}
	req := sundial.MapRequest{ExecutionID: in.ExecutionID, ParentID: in.ParentID, Seq: in.Seq, Payloads: in.Payloads}
	if in.ParentID == 0 {
		// The Start maps: only the instance the run was handed to, while it runs.
		if _, err := s.checkRun(r.Context(), from, in.ExecutionID); err != nil {
			return s.refuse(err, in.ExecutionID)
		}
		x, err := s.store.ExecutionGet(r.Context(), in.ExecutionID)
		if err != nil {
			return err
		}
		job, err := s.store.JobGet(r.Context(), x.JobID)
		if err != nil {
			return err
		}
		req.JobID, req.Handler, req.Depth, req.MaxAttempts = job.ID, remoteMapKey(from.app, job.Handler), 1, job.MaxRetries+1
	} else {
		// A Task maps: only the instance holding the parent's attempt.
		parent, err := s.subtaskOf(r.Context(), in.ExecutionID, in.ParentID)
		if err != nil {
			return err
		}
		if _, ok := remoteHandler(from.app, parent.Handler); !ok {
			return s.wrongAppMap(from, in.ExecutionID)
		}
		if parent.State != store.SubtaskRunning || parent.Owner != owner || parent.Attempt != in.ParentAttempt {
			return &apiError{Status: http.StatusConflict, Code: "failed_precondition",
				Message: fmt.Sprintf("sub-task %d: attempt %d is not running on this instance", in.ParentID, in.ParentAttempt)}
		}
		req.JobID, req.Handler, req.Depth, req.MaxAttempts = parent.JobID, parent.Handler, parent.Depth+1, parent.MaxAttempts
	}
	n, err := s.sched.MapSubtasks(r.Context(), req)
	switch {
	case errors.Is(err, sundial.ErrMapLimit):
		return &apiError{Status: http.StatusConflict, Code: api.CodeMapLimit, Message: err.Error()}
	case errors.Is(err, store.ErrConflict):
		return &apiError{Status: http.StatusConflict, Code: "failed_precondition", Message: err.Error()}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, api.MapResponse{Added: n})
	return nil
}

// subtaskOf reads sub-task id of execution executionID (404 when there is none).
func (s *Server) subtaskOf(ctx context.Context, executionID, id int64) (*store.Subtask, error) {
	got, err := s.store.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: executionID, AfterID: id - 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(got) == 0 || got[0].ID != id {
		return nil, &apiError{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("execution %d has no sub-task %d", executionID, id)}
	}
	return got[0], nil
}

// reducedMap reads the map of execution id that the request's instance reduces: 404 for none,
// 403 for another app's, 409 when the caller does not hold it (not claimed, or released since).
func (s *Server) reducedMap(ctx context.Context, from sender, owner string, id int64) (*store.SubtaskMap, error) {
	if id <= 0 {
		return nil, invalidField("execution_id", "must be positive, got %d", id)
	}
	m, err := s.store.SubtaskMapGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &apiError{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("execution %d has no map", id)}
	} else if err != nil {
		return nil, err
	}
	if _, ok := remoteHandler(from.app, m.Handler); !ok {
		return nil, s.wrongAppMap(from, id)
	}
	if m.State != store.MapReducing || m.Owner != owner {
		return nil, &apiError{Status: http.StatusConflict, Code: "failed_precondition",
			Message: fmt.Sprintf("the map of execution %d is %s, not reduced by this instance", id, m.State)}
	}
	return m, nil
}

func (s *Server) executorSubtasksClaim(w http.ResponseWriter, r *http.Request) error {
	var in api.ClaimRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	from := senderOf(r)
	owner, err := subtaskOwner(from)
	if err != nil {
		return err
	}
	switch {
	case len(in.Handlers) == 0:
		return invalidField("handlers", "must not be empty")
	case in.Limit < 0 || in.Limit > 1000:
		return invalidField("limit", "want 0 to 1000, got %d", in.Limit)
	case in.Maps < 0 || in.Maps > 100:
		return invalidField("maps", "want 0 to 100, got %d", in.Maps)
	}
	keys := make([]string, len(in.Handlers))
	for i, h := range in.Handlers {
		keys[i] = remoteMapKey(from.app, h)
	}
	out := api.ClaimResponse{Subtasks: []api.ClaimedSubtask{}, Maps: []api.ClaimedMap{}}
	ts, err := s.store.SubtasksClaim(r.Context(), owner, keys, in.Limit)
	if err != nil {
		return err
	}
	for _, st := range ts {
		h, _ := remoteHandler(from.app, st.Handler)
		out.Subtasks = append(out.Subtasks, api.ClaimedSubtask{ID: st.ID, ExecutionID: st.ExecutionID, Handler: h, ParentID: st.ParentID,
			Depth: st.Depth, Attempt: st.Attempt, Payload: json.RawMessage(st.Payload)})
	}
	maps, err := s.store.SubtaskMapsClaimReady(r.Context(), owner, keys, in.Maps)
	if err != nil {
		return err
	}
	for _, m := range maps {
		h, _ := remoteHandler(from.app, m.Handler)
		out.Maps = append(out.Maps, api.ClaimedMap{ExecutionID: m.ExecutionID, Handler: h, Total: m.Total})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) executorSubtasksResults(w http.ResponseWriter, r *http.Request) error {
	var in api.SubtaskResults
	if err := decode(r, &in); err != nil {
		return err
	}
	owner, err := subtaskOwner(senderOf(r))
	if err != nil {
		return err
	}
	if len(in.Results) > 1000 {
		return invalidField("results", "at most 1000 a call, got %d", len(in.Results))
	}
	rs := make([]store.SubtaskResult, len(in.Results))
	for i, res := range in.Results {
		out := store.SubtaskResult{ID: res.ID, Attempt: res.Attempt, Owner: owner, State: res.State, Message: res.Message}
		switch res.State {
		case store.SubtaskSucceeded:
			// A result the store may not keep fails the attempt, as in process.
			if err := engine.CheckSubtaskResult(res.Result); err != nil {
				out.State, out.Message = store.SubtaskFailed, err.Error()
			} else {
				out.Result = string(res.Result)
			}
		case store.SubtaskFailed:
		default:
			return invalidField(fmt.Sprintf("results[%d].state", i), "want succeeded or failed, got %q", res.State)
		}
		rs[i] = out
	}
	done, err := s.store.SubtasksComplete(r.Context(), rs)
	if err != nil {
		return err
	}
	if done == nil {
		done = []int64{}
	}
	writeJSON(w, http.StatusOK, api.SubtaskAccepted{Accepted: done})
	return nil
}

func (s *Server) executorSubtasksList(w http.ResponseWriter, r *http.Request) error {
	var in api.SubtaskListRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	from := senderOf(r)
	owner, err := subtaskOwner(from)
	if err != nil {
		return err
	}
	if in.Limit < 0 || in.Limit > 1000 {
		return invalidField("limit", "want 0 to 1000, got %d", in.Limit)
	}
	if _, err := s.reducedMap(r.Context(), from, owner, in.ExecutionID); err != nil {
		return err
	}
	ts, err := s.store.SubtasksList(r.Context(), store.SubtaskFilter{ExecutionID: in.ExecutionID, AfterID: in.AfterID, Limit: cmp.Or(in.Limit, 1000)})
	if err != nil {
		return err
	}
	out := make([]api.Subtask, len(ts))
	for i, st := range ts {
		out[i] = toSubtaskOut(st)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) executorSubtasksReduced(w http.ResponseWriter, r *http.Request) error {
	var in api.ReducedRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	from := senderOf(r)
	owner, err := subtaskOwner(from)
	if err != nil {
		return err
	}
	res := engine.RemoteResult{ExecutionID: in.ExecutionID, Message: in.Message}
	switch in.State {
	case string(store.ExecSucceeded):
		res.State = store.ExecSucceeded
		if err := engine.CheckSubtaskResult(in.Result); err != nil {
			res.State, res.Message = store.ExecFailed, err.Error()
		} else {
			res.Return = in.Result
		}
	case string(store.ExecFailed):
		res.State = store.ExecFailed
	default:
		return invalidField("state", "want succeeded or failed, got %q", in.State)
	}
	if _, err := s.reducedMap(r.Context(), from, owner, in.ExecutionID); err != nil {
		return err
	}
	now := s.clock.Now()
	res.Started, res.Finished = serverTimes(in.StartedAt, 0, now)
	if in.StartedAt == 0 {
		res.Started = now
	}
	done, err := s.sched.Engine().CompleteReduce(r.Context(), owner, res)
	if errors.Is(err, store.ErrConflict) {
		return &apiError{Status: http.StatusConflict, Code: "failed_precondition", Message: err.Error()}
	} else if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.ReducedResponse{Completed: done})
	return nil
}

// releaseSubtasks hands back the sub-tasks and maps a leaving instance holds (unregister).
func (s *Server) releaseSubtasks(ctx context.Context, instance string) error {
	if instance == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := s.store.SubtasksRelease(ctx, []string{engine.ExecutorSubtaskOwner(instance)})
	return err
}
