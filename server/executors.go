package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// The executor side of docs/executor-protocol.md: executors register (and heartbeat), leave,
// stream output and report results with the executor token, not a person's credentials.

var errBadExecutorToken = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
	Message: "executor endpoints need Authorization: Bearer <the app's executor credential> (sundial app credential create)"}

type registerIn struct {
	App      string   `json:"app"`
	Address  string   `json:"address"`
	Instance string   `json:"instance"`
	Version  string   `json:"version"`
	Handlers []string `json:"handlers"`
	Held     []int64  `json:"held"`
}

func (in *registerIn) validate(needHandlers bool) error {
	switch {
	case in.App == "":
		return invalidField("app", "must not be empty")
	case !strings.HasPrefix(in.Address, "http://") && !strings.HasPrefix(in.Address, "https://"):
		return invalidField("address", "want the executor's base URL (http://host:port), got %q", in.Address)
	case len(in.Instance) > 64:
		return invalidField("instance", "at most 64 characters, got %d", len(in.Instance))
	case len(in.Version) > 100:
		return invalidField("version", "at most 100 characters, got %d", len(in.Version))
	case needHandlers && in.Handlers == nil:
		in.Handlers = []string{}
	}
	return nil
}

func (s *Server) executorRegister(w http.ResponseWriter, r *http.Request) error {
	var in registerIn
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.validate(true); err != nil {
		return err
	}
	if err := s.checkApp(r.Context(), in.App); err != nil {
		return err
	}
	if err := s.store.RegistryBeat(r.Context(), in.App, in.Address, in.Instance, in.Version, in.Handlers); err != nil {
		return err
	}
	if err := s.checkHeld(r.Context(), in); err != nil {
		return err
	}
	keys, err := s.remote.ClusterKeys(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, executor.RegisterResponse{HeartbeatIntervalMs: s.cfg.ExecutorHeartbeat.Milliseconds(), ClusterKeys: keys})
	return nil
}

func (s *Server) executorUnregister(w http.ResponseWriter, r *http.Request) error {
	var in registerIn
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.validate(false); err != nil {
		return err
	}
	if err := s.checkApp(r.Context(), in.App); err != nil {
		return err
	}
	if _, err := s.store.RegistryLeave(r.Context(), in.App, in.Address); err != nil {
		return err
	}
	s.log.Info("executor left", "app", in.App, "address", in.Address)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type logsIn struct {
	ExecutionID int64 `json:"execution_id"`
	Lines       []struct {
		Line    int64  `json:"line"`
		At      int64  `json:"at"`
		Message string `json:"message"`
	} `json:"lines"`
}

func (s *Server) executorLogs(w http.ResponseWriter, r *http.Request) error {
	var in logsIn
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.ExecutionID <= 0 {
		return invalidField("execution_id", "must be positive, got %d", in.ExecutionID)
	}
	if _, err := s.checkRun(r.Context(), senderOf(r), in.ExecutionID); err != nil {
		return s.refuse(err, in.ExecutionID)
	}
	lines := make([]store.LogLine, len(in.Lines))
	for i, l := range in.Lines {
		if l.Line < 1 {
			return invalidField(fmt.Sprintf("lines[%d].line", i), "line numbers count from 1, got %d", l.Line)
		}
		lines[i] = store.LogLine{Line: l.Line, At: l.At, Message: l.Message}
	}
	if _, err := s.store.ExecutionLogAppend(r.Context(), in.ExecutionID, lines); err != nil {
		return fmt.Errorf("output of execution %d: %w", in.ExecutionID, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type resultsIn struct {
	Results []struct {
		ExecutionID int64  `json:"execution_id"`
		State       string `json:"state"`
		Code        int    `json:"code"`
		Message     string `json:"message"`
		StartedAt   int64  `json:"started_at"`
		FinishedAt  int64  `json:"finished_at"`
		Traceparent string `json:"traceparent"`
		LinesLost   int64  `json:"lines_lost"`
	} `json:"results"`
}

func (s *Server) executorResults(w http.ResponseWriter, r *http.Request) error {
	var in resultsIn
	if err := decode(r, &in); err != nil {
		return err
	}
	rs := make([]engine.RemoteResult, len(in.Results))
	from, now := senderOf(r), s.clock.Now()
	for i, res := range in.Results {
		switch st := store.ExecutionState(res.State); st {
		case store.ExecSucceeded, store.ExecFailed, store.ExecTimedOut, store.ExecCanceled:
		default:
			return invalidField(fmt.Sprintf("results[%d].state", i), "want succeeded, failed, timed_out or canceled, got %q", res.State)
		}
		// A run not live any more may take a late result (engine.CompleteRemote decides),
		// from the instance it was handed to only; one live elsewhere may not.
		var firedAt int64
		d, err := s.checkRun(r.Context(), from, res.ExecutionID)
		if errors.Is(err, store.ErrNotFound) {
			err = s.checkLate(r.Context(), from, res.ExecutionID)
		}
		switch {
		case err == nil && d != nil:
			firedAt = d.FiredAt
		case err != nil:
			return s.refuse(err, res.ExecutionID)
		}
		if res.LinesLost < 0 {
			return invalidField(fmt.Sprintf("results[%d].lines_lost", i), "must not be negative, got %d", res.LinesLost)
		}
		started, finished := serverTimes(res.StartedAt, firedAt, now)
		rs[i] = engine.RemoteResult{ExecutionID: res.ExecutionID, State: store.ExecutionState(res.State), Code: res.Code,
			Message: res.Message, Started: started, Finished: finished, Traceparent: res.Traceparent, OutputLost: res.LinesLost}
	}
	done, err := s.sched.Engine().CompleteRemote(r.Context(), rs)
	if err != nil {
		return err
	}
	if done == nil {
		done = []int64{}
	}
	writeJSON(w, http.StatusOK, map[string][]int64{"completed": done})
	return nil
}
