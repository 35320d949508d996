package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// The executor side of docs/executor-protocol.md: executors register (and heartbeat), leave,
// stream output and report results with the executor token, not a person's credentials.

var errBadExecutorToken = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
	Message: "executor endpoints need Authorization: Bearer <the app's executor credential> (sundial app credential create)"}

// validRegistration checks a register (with needHandlers) or unregister body.
func validRegistration(in *wire.Registration, needHandlers bool) error {
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
	var in wire.Registration
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := validRegistration(&in, true); err != nil {
		return err
	}
	if err := s.checkApp(r.Context(), in.App); err != nil {
		return err
	}
	if in.Instance != senderOf(r).instance {
		return invalidField("instance", "%q is not the instance the request proves (the %s header): a registration names its own instance", in.Instance, wire.HeaderInstance)
	}
	if err := s.checkRegistration(r, in.App, in.Address); err != nil {
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
	writeJSON(w, http.StatusOK, wire.RegisterResponse{HeartbeatIntervalMs: s.cfg.ExecutorHeartbeat.Milliseconds(), ClusterKeys: keys})
	return nil
}

// checkRegistration refuses to register app's executor at address when the server may not
// call it there: outside --executor-networks (as a manual address), or held by a live
// executor of another app. Runs, with their parameters, would go to the address; and a
// credential of one app naming another app's executor would steer that executor's work
// (which its executor refuses anyway, since every call is signed for the app). A refusal of
// the second kind is written to the audit log: it is what an attacker would try.
func (s *Server) checkRegistration(r *http.Request, app, address string) error {
	if err := s.allowedAddress(address); err != nil {
		s.rejected.WithLabelValues(rejectAddressTaken).Inc()
		return invalidField("address", "%v", err)
	}
	ctx := r.Context()
	live, err := s.store.RegistryAt(ctx, address, dispatch.LiveIntervals*s.cfg.ExecutorHeartbeat)
	if err != nil {
		return err
	}
	for _, in := range live {
		if in.App == app {
			continue
		}
		s.rejected.WithLabelValues(rejectAddressTaken).Inc()
		s.log.Warn("refused an executor registration at another app's executor address", "app", app, "address", address,
			"held_by", in.App, "remote", r.RemoteAddr)
		held, _ := json.Marshal(map[string]string{"held_by_app": in.App})
		entry := &store.AuditEntry{Actor: "executor of " + app, Source: r.RemoteAddr, Action: "executor.register_refused",
			TargetKind: "executor", Target: address, App: app, After: string(held)}
		if err := s.store.AuditInsert(ctx, entry); err != nil {
			return fmt.Errorf("audit the refused registration of %s at %s: %w", app, address, err)
		}
		return &apiError{Status: http.StatusConflict, Code: "already_exists",
			Message: fmt.Sprintf("address %s is held by a live executor of another app: an executor address belongs to one app", address)}
	}
	return nil
}

func (s *Server) executorUnregister(w http.ResponseWriter, r *http.Request) error {
	var in wire.Registration
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := validRegistration(&in, false); err != nil {
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

func (s *Server) executorLogs(w http.ResponseWriter, r *http.Request) error {
	var in wire.LogBatch
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

func (s *Server) executorResults(w http.ResponseWriter, r *http.Request) error {
	var in wire.ResultBatch
	if err := decode(r, &in); err != nil {
		return err
	}
	ids := make([]int64, len(in.Results))
	for i, res := range in.Results {
		switch st := store.ExecutionState(res.State); st {
		case store.ExecSucceeded, store.ExecFailed, store.ExecTimedOut, store.ExecCanceled:
		default:
			return invalidField(fmt.Sprintf("results[%d].state", i), "want succeeded, failed, timed_out or canceled, got %q", res.State)
		}
		ids[i] = res.ExecutionID
	}
	live, lost, err := s.dispatchesOf(r.Context(), ids)
	if err != nil {
		return err
	}
	rs := make([]engine.RemoteResult, len(in.Results))
	from, now := senderOf(r), s.clock.Now()
	for i, res := range in.Results {
		// A run not live any more may take a late result (engine.CompleteRemote decides),
		// from the instance it was handed to only when it was declared lost; one live
		// elsewhere may not. One that ended otherwise takes no result anyway (CompleteRemote
		// changes nothing), so a result reported twice is still answered as before.
		var firedAt int64
		d := live[res.ExecutionID]
		if d != nil {
			firedAt = d.FiredAt
		} else {
			d = lost[res.ExecutionID]
		}
		if d != nil {
			if err := sentTo(d, from); err != nil {
				return s.refuse(err, res.ExecutionID)
			}
		}
		if res.LinesLost < 0 {
			return invalidField(fmt.Sprintf("results[%d].lines_lost", i), "must not be negative, got %d", res.LinesLost)
		}
		started, finished := serverTimes(res.StartedAt, firedAt, now)
		rs[i] = engine.RemoteResult{ExecutionID: res.ExecutionID, State: store.ExecutionState(res.State), Code: res.Code,
			Message: res.Message, Started: started, Finished: finished, Traceparent: res.Traceparent, OutputLost: res.LinesLost,
			Return: json.RawMessage(res.Result)}
	}
	done, err := s.sched.Engine().CompleteRemote(r.Context(), rs)
	if err != nil {
		return err
	}
	if done == nil {
		done = []int64{}
	}
	writeJSON(w, http.StatusOK, wire.ResultsResponse{Completed: done})
	return nil
}
