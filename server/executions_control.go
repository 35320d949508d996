package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// killWait bounds how long a kill waits for the executor's canceled result, so the answer
// usually shows the final state; a result that comes later still ends the execution.
const killWait = 3 * time.Second

// killExecution stops a running remote execution. The executor cancels the run and reports
// it canceled. When the executor does not know the run (it finished a moment ago, or the run
// never reached it) the execution is completed as canceled here: the compare-and-set leaves
// one whose result arrived meanwhile alone. An executor that does not answer is an error, not
// a kill: the run may still be going, and the registry sweep declares it lost if the
// executor is gone.
func (s *Server) killExecution(ctx context.Context, in *ExecutionRef) (*store.Execution, error) {
	id := in.ID
	x, err := s.store.ExecutionGet(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case x.State.Terminal():
		return nil, conflict("execution %d has ended already (%s)", id, x.State)
	case x.State != store.ExecRunning:
		return nil, conflict("execution %d is %s: only a running execution can be killed", id, x.State)
	case x.ExecutorAddress == "":
		return s.killInProcess(ctx, x)
	}
	killed, err := s.remote.KillExecution(ctx, x)
	var other *dispatch.OtherInstanceError
	switch {
	case errors.As(err, &other):
		// Another process answers at the address (the executor restarted, or the address is
		// someone else's now): its "not running it" says nothing about the run, which the
		// heartbeat check declares lost with the instance that had it.
		s.rejected.WithLabelValues(rejectWrongInstance).Inc()
		s.log.Warn("refused a kill answer from another executor instance", "execution", id, "executor", x.ExecutorAddress,
			"instance", other.Instance, "answered", other.Answered)
		return nil, &apiError{Status: http.StatusConflict, Code: "failed_precondition", Message: fmt.Sprintf("kill execution %d: %v", id, err)}
	case errors.Is(err, store.ErrNotFound):
		return nil, conflict("execution %d has just ended", id)
	case err != nil:
		return nil, &apiError{Status: http.StatusBadGateway, Code: "executor_unavailable",
			Message: fmt.Sprintf("kill execution %d: executor %s did not answer: %v", id, x.ExecutorAddress, err)}
	}
	if !killed {
		now := s.clock.Now()
		if _, err := s.sched.Engine().CompleteRemote(ctx, []engine.RemoteResult{{ExecutionID: id, State: store.ExecCanceled,
			Message: "killed (the executor " + x.ExecutorAddress + " was not running it)", Started: now, Finished: now}}); err != nil {
			return nil, fmt.Errorf("kill execution %d: %w", id, err)
		}
	}
	s.log.Info("execution killed", "execution", id, "executor", x.ExecutorAddress, "executor_knew", killed)
	if err := s.auditEvent(s.auditedCtx(ctx, "execution.kill", "execution", strconv.FormatInt(id, 10), nil)); err != nil {
		return nil, fmt.Errorf("kill execution %d: %w", id, err)
	}
	return s.awaitEnd(ctx, id, killWait)
}

// killInProcess stops a run of an in-process job on whichever node runs it: this one cancels
// its handler at once, another takes the kill request from the database within its poll
// interval. The run ends canceled with the handler's return.
func (s *Server) killInProcess(ctx context.Context, x *store.Execution) (*store.Execution, error) {
	here, err := s.sched.Engine().Kill(ctx, x)
	if err != nil {
		return nil, fmt.Errorf("kill execution %d: %w", x.ID, err)
	}
	s.log.Info("execution kill requested", "execution", x.ID, "node", x.Node, "here", here)
	return s.awaitEnd(ctx, x.ID, killWait)
}

// awaitEnd polls the execution until it is terminal or wait passes, and returns it as it is.
func (s *Server) awaitEnd(ctx context.Context, id int64, wait time.Duration) (*store.Execution, error) {
	deadline := s.clock.Now().Add(wait)
	for {
		x, err := s.store.ExecutionGet(ctx, id)
		if err != nil || x.State.Terminal() || s.clock.Now().After(deadline) {
			return x, err
		}
		t := s.clock.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return x, nil
		case <-t.C():
		}
	}
}

// retryExecution runs an ended execution again now, as its next attempt (engine.Retry).
func (s *Server) retryExecution(ctx context.Context, in *ExecutionRef) (*store.Execution, error) {
	out, err := s.sched.Engine().Retry(s.auditedCtx(ctx, "execution.retry", "execution", strconv.FormatInt(in.ID, 10), nil), in.ID)
	if se := (*engine.StateError)(nil); errors.As(err, &se) {
		return nil, conflict("%s", se.Msg)
	}
	return out, err
}

func writeKilled(w http.ResponseWriter, _ *http.Request, x *store.Execution) error {
	writeJSON(w, http.StatusAccepted, toExecutionOut(x))
	return nil
}

func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Code: "failed_precondition", Message: fmt.Sprintf(format, args...)}
}
