package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// The executor side of docs/executor-protocol.md: executors register (and heartbeat), leave,
// stream output and report results with the executor token, not a person's credentials.

var errBadExecutorToken = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
	Message: "executor endpoints need Authorization: Bearer <the app's executor credential> (sundial app credential create)"}

// validRegistration checks a register (with needHandlers) or unregister body; streamed is the
// instance whose stream it came over ("" over HTTP), whose address is wire.StreamAddress of
// it and no other: an address nothing listens on, which only that instance's stream reaches.
func validRegistration(in *wire.Registration, needHandlers bool, streamed string) error {
	switch {
	case in.App == "":
		return invalidField("app", "must not be empty")
	case streamed != "" && in.Address != wire.StreamAddress(streamed):
		return invalidField("address", "an executor on a stream registers %q, got %q", wire.StreamAddress(streamed), in.Address)
	case streamed != "":
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
	if err := validRegistration(&in, true, streamedInstance(r.Context())); err != nil {
		return err
	}
	if err := s.checkApp(r.Context(), in.App); err != nil {
		return err
	}
	if in.Instance != senderOf(r).instance {
		return invalidField("instance", "%q is not the instance the request proves (the %s header): a registration names its own instance", in.Instance, wire.HeaderInstance)
	}
	if err := s.register(r, in.App, in.Address, func() error {
		return s.store.RegistryBeat(r.Context(), in.App, in.Address, in.Instance, in.Version, in.Handlers)
	}); err != nil {
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

// register runs beat, the registry write of app's executor at address, when the server may
// call it there: not outside --executor-networks (as a manual address), and not while another
// app's executor holds the address (store.RegistryBeat decides that atomically: until that app
// leaves or its silent row is swept, with its runs declared lost). Runs, with their
// parameters, would go to the address; and a credential of one app naming another app's
// executor would steer that executor's work (which its executor refuses anyway, since every
// call is signed for the app). A refusal of the second kind is written to the audit log: it is
// what an attacker would try.
func (s *Server) register(r *http.Request, app, address string, beat func() error) error {
	// A streamed instance's address is called by no one (validRegistration took it only
	// from its own stream): --executor-networks bound where runs are sent.
	if err := s.allowedAddress(address); err != nil && !strings.HasPrefix(address, wire.StreamScheme) {
		s.rejected.WithLabelValues(rejectAddressTaken).Inc()
		return invalidField("address", "%v", err)
	}
	err := beat()
	var taken *store.ExistsError
	if !errors.As(err, &taken) || taken.Field != "address" {
		return err // nil too
	}
	s.rejected.WithLabelValues(rejectAddressTaken).Inc()
	s.log.Warn("refused an executor registration at another app's executor address", "app", app, "address", address,
		"held_by", taken.Holder, "remote", r.RemoteAddr)
	held, _ := json.Marshal(map[string]string{"held_by": taken.Holder})
	entry := &store.AuditEntry{Actor: "executor of " + app, Source: r.RemoteAddr, Action: "executor.register_refused",
		TargetKind: "executor", Target: address, App: app, After: string(held)}
	if aerr := s.store.AuditInsert(r.Context(), entry); aerr != nil {
		return fmt.Errorf("audit the refused registration of %s at %s: %w", app, address, aerr)
	}
	return err
}

func (s *Server) executorUnregister(w http.ResponseWriter, r *http.Request) error {
	var in wire.Registration
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := validRegistration(&in, false, streamedInstance(r.Context())); err != nil {
		return err
	}
	if err := s.checkApp(r.Context(), in.App); err != nil {
		return err
	}
	if _, err := s.store.RegistryLeave(r.Context(), in.App, in.Address); err != nil {
		return err
	}
	// What it still holds of maps goes back to its app's other executors at once.
	if err := s.releaseSubtasks(r.Context(), senderOf(r).instance); err != nil {
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
	lines, err := storeLines("lines", in.Lines)
	if err != nil {
		return err
	}
	// Appended with the output of the requests that come meanwhile, in one transaction.
	appendErr, err := s.logAppends.Do(r.Context(), logAppend{in.ExecutionID, lines})
	if err = errors.Join(err, appendErr); err != nil {
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
	var output []store.ExecutionLines // lines that came with results, of runs sent to the sender
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
		lines, err := storeLines(fmt.Sprintf("results[%d].lines", i), res.Lines)
		if err != nil {
			return err
		}
		if d != nil && len(lines) > 0 {
			output = append(output, store.ExecutionLines{ExecutionID: res.ExecutionID, Lines: lines})
		}
		started, finished := serverTimes(res.StartedAt, firedAt, now)
		rs[i] = engine.RemoteResult{ExecutionID: res.ExecutionID, State: store.ExecutionState(res.State), Code: res.Code,
			Message: res.Message, Started: started, Finished: finished, Traceparent: res.Traceparent, OutputLost: res.LinesLost,
			Return: json.RawMessage(res.Result)}
	}
	// Output before the results, so that whoever reads a result finds its lines. Rare (the
	// executor streams output while a run lasts) and idempotent by line number: the
	// executor sends the result again, with its lines, when either write fails.
	if len(output) > 0 {
		if _, err := s.store.ExecutionLogsAppend(r.Context(), output); err != nil {
			return fmt.Errorf("output sent with results: %w", err)
		}
	}
	// Written with the results of the requests that come meanwhile. A write that fails
	// fails each of them: the executors keep the results and send them again.
	done, err := s.results.Do(r.Context(), rs)
	if err != nil {
		return err
	}
	if done == nil {
		done = []int64{}
	}
	writeJSON(w, http.StatusOK, wire.ResultsResponse{Completed: done})
	return nil
}

// storeLines checks output lines as sent by an executor (field is their JSON path) and
// turns them into the store's.
func storeLines(field string, in []wire.LogLine) ([]store.LogLine, error) {
	lines := make([]store.LogLine, len(in))
	for i, l := range in {
		if l.Line < 1 {
			return nil, invalidField(fmt.Sprintf("%s[%d].line", field, i), "line numbers count from 1, got %d", l.Line)
		}
		lines[i] = store.LogLine{Line: l.Line, At: l.At, Message: l.Message}
	}
	return lines, nil
}

// logCalls bounds the output requests appended together (each up to 100 lines).
const logCalls = 50

// resultCalls bounds the results requests completed together: the SDK sends at most 100
// results a request.
const resultCalls = 20

// completeResults completes the results of several requests with one CompleteRemote (its
// reads and one transaction) and gives each request the ids of its own that completed.
func (s *Server) completeResults(ctx context.Context, calls [][]engine.RemoteResult) ([][]int64, error) {
	var all []engine.RemoteResult
	for _, c := range calls {
		all = append(all, c...)
	}
	done, err := s.sched.Engine().CompleteRemote(ctx, all)
	if err != nil {
		return nil, err
	}
	completed := make(map[int64]bool, len(done))
	for _, id := range done {
		completed[id] = true
	}
	out := make([][]int64, len(calls))
	for i, c := range calls {
		out[i] = []int64{}
		for _, r := range c {
			if completed[r.ExecutionID] && !slices.Contains(out[i], r.ExecutionID) {
				out[i] = append(out[i], r.ExecutionID)
			}
		}
	}
	return out, nil
}

// logAppend is one request's output lines (executorLogs).
type logAppend struct {
	id    int64
	lines []store.LogLine
}

// appendLogs appends several requests' output in one transaction. When that fails each is
// appended alone, so that one request the store refuses does not fail the others: each gets
// its own error, and its executor keeps its lines and sends them again.
func (s *Server) appendLogs(ctx context.Context, batch []logAppend) ([]error, error) {
	errs := make([]error, len(batch))
	if len(batch) > 1 {
		if err := s.appendLogsTogether(ctx, batch); err == nil {
			return errs, nil
		}
	}
	for i, a := range batch {
		_, errs[i] = s.store.ExecutionLogAppend(ctx, a.id, a.lines)
	}
	return errs, nil
}

func (s *Server) appendLogsTogether(ctx context.Context, batch []logAppend) error {
	all := make([]store.ExecutionLines, len(batch))
	for i, a := range batch {
		all[i] = store.ExecutionLines{ExecutionID: a.id, Lines: a.lines}
	}
	// One statement per chunk of rows; the transaction keeps the chunks of a large batch
	// together, so that a refused batch leaves nothing half stored before each is tried alone.
	return store.InTx(ctx, s.store, func(q store.Querier) error {
		_, err := q.ExecutionLogsAppend(ctx, all)
		return err
	})
}
