package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/store"
)

// What an executor reports about a run is taken only from the executor the run was handed
// to: the executor token alone would let any holder finish, or write the output of, any
// app's runs. The sender names itself (wire.HeaderApp, wire.HeaderInstance, the
// instance proven by its key: checkProof) and must match the app of the run's job and the
// instance recorded at dispatch.

// Reasons of sundial_executor_rejected_total.
const (
	rejectNotLive       = "not_live"       // a report about a run not running (not created yet, or ended) or not on an executor
	rejectWrongApp      = "wrong_app"      // the run belongs to another app's job
	rejectWrongInstance = "wrong_instance" // the run was handed to another instance of the app
	rejectNoClientCert  = "no_client_cert" // mutual TLS is on and the request had no verified client certificate
	rejectNoProof       = "no_proof"       // the request names an instance without the proof of its key
	rejectAddressTaken  = "address_taken"  // a registration of an address another app's live executor holds, or outside --executor-networks
)

func newRejectedCounter(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sundial_executor_rejected_total",
		Help: "Executor reports about runs refused, by reason: not_live (about a run not running, or not on an executor), " +
			"wrong_app (the run is another app's), wrong_instance (the run was handed to another executor instance, " +
			"or another instance answered its kill), no_client_cert (mutual TLS is on and the executor presented no verified certificate), " +
			"no_proof (a request naming an executor instance without the proof of its key), " +
			"address_taken (a registration of an address another app's live executor holds, or outside --executor-networks)."},
		[]string{"reason"})
	for _, r := range []string{rejectNotLive, rejectWrongApp, rejectWrongInstance, rejectNoClientCert, rejectNoProof, rejectAddressTaken} {
		c.WithLabelValues(r) // every series from the start, so a rate alert sees 0 and not nothing
	}
	reg.MustRegister(c)
	return c
}

// errSender is a refused report; its reason is counted.
type errSender struct {
	reason string
	err    *apiError
}

func (e *errSender) Error() string { return e.err.Message }

// sender is who an executor request says it comes from.
type sender struct{ app, instance string }

// senderOf reads the sender from the headers; an app credential decides the app.
func senderOf(r *http.Request) sender {
	from := sender{app: r.Header.Get(wire.HeaderApp), instance: r.Header.Get(wire.HeaderInstance)}
	if bound := appBound(r.Context()); bound != "" {
		from.app = bound
	}
	return from
}

// checkRun tells whether from may report output about execution id. A run not running is
// store.ErrNotFound (wrapped). A run recorded for no instance (an executor that sends no id)
// is open to any instance of its app; a manual address's run is recorded for the instance
// that answered there (dispatch learns it by a beat before the run).
func (s *Server) checkRun(ctx context.Context, from sender, id int64) (*store.Dispatched, error) {
	got, err := s.dispatchReads.Do(ctx, []int64{id}) // with the reads of the requests that come meanwhile
	if err != nil {
		return nil, err
	}
	d := got[id]
	if d == nil {
		return nil, fmt.Errorf("running execution %d: %w", id, store.ErrNotFound)
	}
	return d, sentTo(d, from)
}

// readDispatches reads whom the running executions of several requests were handed to, in
// one read (checkRun, dispatchesOf), and gives each request those of its ids that run.
func (s *Server) readDispatches(ctx context.Context, reqs [][]int64) ([]map[int64]*store.Dispatched, error) {
	var ids []int64
	for _, r := range reqs {
		ids = append(ids, r...)
	}
	slices.Sort(ids)
	got, err := s.store.ExecutionsDispatchedTo(ctx, slices.Compact(ids))
	if err != nil {
		return nil, err
	}
	out := make([]map[int64]*store.Dispatched, len(reqs))
	for i, r := range reqs {
		out[i] = make(map[int64]*store.Dispatched, len(r))
		for _, id := range r {
			if d := got[id]; d != nil {
				out[i][id] = d
			}
		}
	}
	return out, nil
}

// dispatchesOf reads whom the executions ids were handed to, in two reads for a whole batch
// of results: those running, and of the others those declared lost (a late result is taken
// from the instance a lost run had been handed to, as a live run's is).
func (s *Server) dispatchesOf(ctx context.Context, ids []int64) (live, lost map[int64]*store.Dispatched, err error) {
	if live, err = s.dispatchReads.Do(ctx, ids); err != nil {
		return nil, nil, err
	}
	var rest []int64
	for _, id := range ids {
		if live[id] == nil {
			rest = append(rest, id)
		}
	}
	if len(rest) > 0 {
		if lost, err = s.store.ExecutionsLostTo(ctx, rest); err != nil {
			return nil, nil, err
		}
	}
	return live, lost, nil
}

// sentTo refuses from when the run d describes was not handed to it.
func sentTo(d *store.Dispatched, from sender) error {
	id := d.ID
	switch {
	case d.Address == "":
		// A run of an in-process job (or one not sent yet: the address is recorded before
		// the run is sent) is no executor's to report about.
		return &errSender{rejectNotLive, &apiError{Status: http.StatusConflict, Code: "failed_precondition",
			Message: fmt.Sprintf("execution %d was not handed to an executor", id)}}
	case d.App != from.app:
		return &errSender{rejectWrongApp, &apiError{Status: http.StatusForbidden, Code: "permission_denied",
			Message: fmt.Sprintf("execution %d belongs to another app than %q", id, from.app)}}
	case d.Instance != "" && d.Instance != from.instance:
		return &errSender{rejectWrongInstance, &apiError{Status: http.StatusConflict, Code: "failed_precondition",
			Message: fmt.Sprintf("execution %d was handed to another executor instance than %q", id, from.instance)}}
	}
	return nil
}

// refuse counts a refused report and turns it into the API's answer.
func (s *Server) refuse(err error, id int64) error {
	var se *errSender
	switch {
	case errors.As(err, &se):
		s.rejected.WithLabelValues(se.reason).Inc()
		s.log.Warn("refused an executor report", "execution_id", id, "reason", se.reason, "err", se.err.Message)
		return se.err
	case errors.Is(err, store.ErrNotFound):
		s.rejected.WithLabelValues(rejectNotLive).Inc()
		return &apiError{Status: http.StatusConflict, Code: "failed_precondition",
			Message: fmt.Sprintf("execution %d is not running", id)}
	}
	return err
}

// serverTimes replaces a result's times by the server's: it finished now (when the result
// arrives), and it started no earlier than it was fired and no later than now. firedAt is 0
// for a run no longer live (a late result), whose start is only capped.
func serverTimes(startedAt, firedAt int64, now time.Time) (started, finished time.Time) {
	ms := now.UnixMilli()
	startedAt = min(max(startedAt, firedAt), ms)
	if startedAt <= 0 {
		startedAt = ms
	}
	return time.UnixMilli(startedAt), now
}
