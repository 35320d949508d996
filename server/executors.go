package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// The executor side of docs/executor-protocol.md: executors register (and heartbeat), leave,
// stream output and report results with the executor token, not a person's credentials.

var errBadExecutorToken = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
	Message: "executor endpoints need Authorization: Bearer <executor token> (sundial server --executor-token)"}

// executorAuth admits requests carrying the executor token. With no token configured nothing
// is admitted: an open registry would let anyone receive the jobs' parameters.
func (s *Server) executorAuth(h apiHandler) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if s.cfg.ExecutorToken == "" || !ok ||
			subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.ExecutorToken)) != 1 {
			return errBadExecutorToken
		}
		return h(w, r)
	}
}

type registerIn struct {
	App      string   `json:"app"`
	Address  string   `json:"address"`
	Instance string   `json:"instance"`
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
	if err := s.store.RegistryBeat(r.Context(), in.App, in.Address, in.Instance, in.Handlers); err != nil {
		return err
	}
	if err := s.checkHeld(r.Context(), in); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"heartbeat_interval_ms": s.cfg.ExecutorHeartbeat.Milliseconds()})
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
	} `json:"results"`
}

func (s *Server) executorResults(w http.ResponseWriter, r *http.Request) error {
	var in resultsIn
	if err := decode(r, &in); err != nil {
		return err
	}
	rs := make([]engine.RemoteResult, len(in.Results))
	for i, res := range in.Results {
		switch st := store.ExecutionState(res.State); st {
		case store.ExecSucceeded, store.ExecFailed, store.ExecTimedOut, store.ExecCanceled:
		default:
			return invalidField(fmt.Sprintf("results[%d].state", i), "want succeeded, failed, timed_out or canceled, got %q", res.State)
		}
		rs[i] = engine.RemoteResult{ExecutionID: res.ExecutionID, State: store.ExecutionState(res.State), Code: res.Code,
			Message: res.Message, Started: time.UnixMilli(res.StartedAt), Finished: time.UnixMilli(res.FinishedAt)}
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

// sweepLoop runs the leader duties: every heartbeat interval it forgets the instances silent
// for three intervals and declares their running executions lost, retrying them per their
// job; every ReportInterval it recomputes the recent daily report rows; every
// retentionEvery it deletes executions older than the retention. (Alarms have their own
// loop, alarm.Sender: a slow mail server must not hold up the executor sweep.)
func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.ExecutorHeartbeat)
	defer t.Stop()
	var lastRetention, lastReport time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.sched.Engine().IsLeader() {
			continue
		}
		if err := s.sweepExecutors(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("sweeping silent executors", "err", err)
		}
		if time.Since(lastReport) >= s.cfg.ReportInterval {
			lastReport = time.Now()
			if err := s.refreshReports(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("refreshing the daily reports", "err", err)
			}
		}
		if time.Since(lastRetention) >= retentionEvery {
			lastRetention = time.Now()
			if _, err := s.sweepRetention(ctx, time.Now()); err != nil && ctx.Err() == nil {
				s.log.Error("deleting old executions", "err", err)
			}
		}
	}
}

// retentionEvery is how often the leader deletes old executions; retentionBatch is how many
// one statement deletes, so no delete holds its locks for long.
const (
	retentionEvery = 10 * time.Minute
	retentionBatch = 1000
)

// sweepRetention deletes the finished executions (with their output) fired more than the
// retention before now, in keyset batches, and returns how many it deleted.
func (s *Server) sweepRetention(ctx context.Context, now time.Time) (int64, error) {
	before := now.Add(-s.cfg.Retention).UnixMilli()
	var total int64
	for {
		n, err := s.store.ExecutionsDeleteFiredBefore(ctx, before, retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			if total > 0 {
				s.log.Info("deleted old executions", "count", total, "fired_before", time.UnixMilli(before))
			}
			return total, err
		}
	}
}

// sweepExecutors runs one sweep. Each instance's executions move running → lost with a
// compare-and-set in the same transaction that inserts their retries, so a result that
// arrives first wins and a lost execution is retried once. A lost broadcast shard is retried
// alone, as that shard.
func (s *Server) sweepExecutors(ctx context.Context) error {
	gone, err := s.store.RegistrySweep(ctx, 3*s.cfg.ExecutorHeartbeat)
	if err != nil {
		return err
	}
	for _, in := range gone {
		n, err := s.loseExecutor(ctx, in.App, in.Address)
		if err != nil {
			return fmt.Errorf("executor %s of %s: %w", in.Address, in.App, err)
		}
		s.log.Warn("executor went silent", "app", in.App, "address", in.Address, "lost", n)
	}
	return nil
}

func (s *Server) loseExecutor(ctx context.Context, app, address string) (int, error) {
	lost, alarmed, err := s.sched.Engine().LoseOnExecutorIDs(ctx, app, address, nil)
	if alarmed > 0 {
		s.alarms.Wake()
	}
	return lost, err
}
