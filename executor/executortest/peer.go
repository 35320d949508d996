// Package executortest provides Peer, an in-memory implementation of the server side of the
// native executor protocol, for testing executors over real sockets: it records
// registrations, output lines and results, answers as a server does, and calls executors'
// run, kill, beat and idle-beat endpoints.
package executortest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
)

// Peer is the server side of the protocol. Its zero value is not usable; use NewPeer.
type Peer struct {
	URL   string
	Token string
	// HeartbeatMs is what register answers (default 3000).
	HeartbeatMs int64
	// Signer is the peer's cluster key: register answers with its public key, and every call
	// to an executor is signed with it.
	Signer *execsign.Signer
	// Now is the time calls are signed at (default time.Now): set it to the executor's
	// clock when that is a fake one.
	Now func() time.Time

	srv *httptest.Server

	mu            sync.Mutex
	changed       chan struct{} // closed and replaced whenever something is recorded
	registrations []wire.Registration
	unregs        []wire.Registration
	logs          map[int64]map[int64]wire.LogLine
	results       map[int64]wire.Result
	resultCalls   int
	refusedCalls  int
	failResults   int // HTTP status to answer results with, 0 = take them
	failLogs      int // HTTP status to answer output lines with, 0 = take them
	// refuseLines answers 400 to results that carry output lines, as a server from before
	// they did would (it refuses unknown fields).
	refuseLines bool
}

// NewPeer starts a Peer that requires token; it is closed when the test ends.
func NewPeer(t testing.TB, token string) *Peer {
	priv, _, err := execsign.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := execsign.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	p := &Peer{Token: token, HeartbeatMs: 3000, Signer: signer, Now: time.Now, changed: make(chan struct{}),
		logs: map[int64]map[int64]wire.LogLine{}, results: map[int64]wire.Result{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+wire.PathRegister, func(w http.ResponseWriter, r *http.Request) {
		var reg wire.Registration
		if !p.decode(w, r, &reg) {
			return
		}
		if reg.App == "" || reg.Address == "" {
			http.Error(w, "app and address are required", http.StatusBadRequest)
			return
		}
		p.record(func() { p.registrations = append(p.registrations, reg) })
		p.mu.Lock()
		hb := p.HeartbeatMs
		p.mu.Unlock()
		writeJSON(w, wire.RegisterResponse{HeartbeatIntervalMs: hb, ClusterKeys: []string{p.Signer.Public()}})
	})
	mux.HandleFunc("POST "+wire.PathUnregister, func(w http.ResponseWriter, r *http.Request) {
		var reg wire.Registration
		if !p.decode(w, r, &reg) {
			return
		}
		p.record(func() { p.unregs = append(p.unregs, reg) })
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+wire.PathLogs, func(w http.ResponseWriter, r *http.Request) {
		var b wire.LogBatch
		if !p.decode(w, r, &b) {
			return
		}
		if b.ExecutionID <= 0 {
			http.Error(w, "execution_id is required", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		fail := p.failLogs
		p.mu.Unlock()
		if fail != 0 {
			http.Error(w, "not taken", fail)
			return
		}
		p.record(func() { p.addLines(b.ExecutionID, b.Lines) })
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+wire.PathResults, func(w http.ResponseWriter, r *http.Request) {
		var b wire.ResultBatch
		if !p.decode(w, r, &b) {
			return
		}
		p.mu.Lock()
		fail, refuseLines := p.failResults, p.refuseLines
		p.mu.Unlock()
		if fail != 0 {
			p.record(func() { p.refusedCalls++ })
			http.Error(w, "unavailable", fail)
			return
		}
		if refuseLines && slices.ContainsFunc(b.Results, func(res wire.Result) bool { return len(res.Lines) > 0 }) {
			p.record(func() { p.refusedCalls++ })
			http.Error(w, `json: unknown field "lines"`, http.StatusBadRequest)
			return
		}
		for _, res := range b.Results {
			switch res.State {
			case wire.StateSucceeded, wire.StateFailed, wire.StateTimedOut, wire.StateCanceled:
			default:
				http.Error(w, fmt.Sprintf("state %q is not a final state", res.State), http.StatusBadRequest)
				return
			}
		}
		var completed []int64
		p.record(func() {
			p.resultCalls++
			for _, res := range b.Results {
				p.addLines(res.ExecutionID, res.Lines) // as a server does: output before the result
				if _, done := p.results[res.ExecutionID]; done {
					continue // compare-and-set: the first result wins
				}
				p.results[res.ExecutionID] = res
				completed = append(completed, res.ExecutionID)
			}
		})
		writeJSON(w, wire.ResultsResponse{Completed: completed})
	})
	want := []byte("Bearer " + token)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return
		}
		// As a server does: the instance a request names must be proven by its key.
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = execsign.VerifyProof(r, r.URL.Path, body, r.Header.Get(wire.HeaderApp), r.Header.Get(wire.HeaderInstance), p.Now())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		mux.ServeHTTP(w, r)
	}))
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

func (p *Peer) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// addLines stores lines of execution id by line number, so a batch sent twice is stored
// once; p.mu is held.
func (p *Peer) addLines(id int64, lines []wire.LogLine) {
	if len(lines) == 0 {
		return
	}
	m := p.logs[id]
	if m == nil {
		m = map[int64]wire.LogLine{}
		p.logs[id] = m
	}
	for _, l := range lines {
		m[l.Line] = l
	}
}

func (p *Peer) record(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
	close(p.changed)
	p.changed = make(chan struct{})
}

// FailResults makes results answer with status (e.g. 503) until called with 0.
func (p *Peer) FailResults(status int) {
	p.record(func() { p.failResults = status })
}

// RefuseResultLines makes results that carry output lines answered 400, as a server from
// before results carried them answers, until called with false.
func (p *Peer) RefuseResultLines(refuse bool) {
	p.record(func() { p.refuseLines = refuse })
}

// FailLogs makes output lines answered with status (e.g. 409) until called with 0.
func (p *Peer) FailLogs(status int) {
	p.record(func() { p.failLogs = status })
}

// Wait blocks until cond, called whenever something is recorded, returns true, and fails
// the test after timeout. cond may use the Peer's accessors.
func (p *Peer) Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		// Taking the channel before testing cond: a change between the two closes it.
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// Registrations returns the registrations received so far.
func (p *Peer) Registrations() []wire.Registration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.registrations)
}

// Unregistrations returns the unregistrations received so far.
func (p *Peer) Unregistrations() []wire.Registration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.unregs)
}

// RefusedResultCalls counts results calls answered with the FailResults status.
func (p *Peer) RefusedResultCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusedCalls
}

// ResultCalls counts results calls taken.
func (p *Peer) ResultCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resultCalls
}

// Result returns the result recorded for id.
func (p *Peer) Result(id int64) (wire.Result, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.results[id]
	return r, ok
}

// HasResult reports whether a result for id arrived.
func (p *Peer) HasResult(id int64) bool { _, ok := p.Result(id); return ok }

// WaitResult waits for the result of id.
func (p *Peer) WaitResult(t testing.TB, id int64, timeout time.Duration) wire.Result {
	t.Helper()
	p.Wait(t, timeout, fmt.Sprintf("the result of execution %d", id), func() bool { return p.HasResult(id) })
	r, _ := p.Result(id)
	return r
}

// Lines returns the output lines of id in line order.
func (p *Peer) Lines(id int64) []wire.LogLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []wire.LogLine
	for _, l := range p.logs[id] {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b wire.LogLine) int { return int(a.Line - b.Line) })
	return out
}

// Output returns the output of id as text, one line each.
func (p *Peer) Output(id int64) string {
	var b strings.Builder
	for _, l := range p.Lines(id) {
		b.WriteString(l.Message)
		b.WriteByte('\n')
	}
	return b.String()
}

// WaitOutput waits until the output of id contains substr.
func (p *Peer) WaitOutput(t testing.TB, id int64, substr string, timeout time.Duration) {
	t.Helper()
	p.Wait(t, timeout, fmt.Sprintf("output %q of execution %d", substr, id), func() bool {
		for _, l := range p.Lines(id) {
			if strings.Contains(l.Message, substr) {
				return true
			}
		}
		return false
	})
}

// Request makes a call of body to an executor's path, signed with the peer's key for the
// executor instance ("" for none) of the app that registered address last, at address.
// Send it with Send; tests alter or repeat it.
func (p *Peer) Request(ctx context.Context, address, path, instance string, body any) (*http.Request, error) {
	return p.RequestFor(ctx, address, path, execsign.Target{App: p.registered(address).App, Instance: instance,
		Address: strings.TrimRight(address, "/")}, body)
}

// RequestFor is Request signed for the target to, which tests may point elsewhere than
// address.
func (p *Peer) RequestFor(ctx context.Context, address, path string, to execsign.Target, body any) (*http.Request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(address, "/")+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := p.Signer.Sign(req, path, b, to, p.Now()); err != nil {
		return nil, err
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return req, nil
}

// Send sends req (again, if it was sent before) and returns the status and the answer.
func Send(req *http.Request) (int, []byte, error) {
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return 0, nil, err
		}
		req = req.Clone(req.Context())
		req.Body = body
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// Call posts body to an executor's path, signed for instance, and returns the status and the
// answer.
func (p *Peer) Call(ctx context.Context, address, path, instance string, body any) (int, []byte, error) {
	req, err := p.Request(ctx, address, path, instance, body)
	if err != nil {
		return 0, nil, err
	}
	return Send(req)
}

// InstanceAt is the instance that registered address last, as a server's registry knows it.
func (p *Peer) InstanceAt(address string) string { return p.registered(address).Instance }

// registered is the last registration of address.
func (p *Peer) registered(address string) wire.Registration {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.registrations) - 1; i >= 0; i-- {
		if p.registrations[i].Address == strings.TrimRight(address, "/") {
			return p.registrations[i]
		}
	}
	return wire.Registration{}
}

// call posts signed for instance and decodes a 200 answer into out.
func (p *Peer) call(ctx context.Context, address, path, instance string, in, out any) error {
	status, body, err := p.Call(ctx, address, path, instance, in)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("POST %s%s: status %d: %s", address, path, status, body)
	}
	return json.Unmarshal(body, out)
}

// Run asks the executor at address to run req; a req naming no instance is sent for the one
// that registered address last, as a server does.
func (p *Peer) Run(ctx context.Context, address string, req wire.RunRequest) (wire.RunResponse, error) {
	if req.Instance == "" {
		req.Instance = p.InstanceAt(address)
	}
	var resp wire.RunResponse
	err := p.call(ctx, address, wire.PathRun, req.Instance, req, &resp)
	return resp, err
}

// Kill asks the executor at address (the instance that registered it last) to kill an
// execution.
func (p *Peer) Kill(ctx context.Context, address string, id int64) (bool, error) {
	var resp wire.KillResponse
	err := p.call(ctx, address, wire.PathKill, p.InstanceAt(address), wire.KillRequest{ExecutionID: id}, &resp)
	return resp.Killed, err
}

// Beat checks the executor at address is alive.
func (p *Peer) Beat(ctx context.Context, address string) error {
	var resp wire.BeatResponse
	return p.call(ctx, address, wire.PathBeat, "", struct{}{}, &resp)
}

// IdleBeat asks the executor at address whether a job is idle there.
func (p *Peer) IdleBeat(ctx context.Context, address string, jobID int64) (bool, error) {
	var resp wire.IdleBeatResponse
	err := p.call(ctx, address, wire.PathIdleBeat, "", wire.IdleBeatRequest{JobID: jobID}, &resp)
	return resp.Idle, err
}

// Close stops the peer's server and cuts its connections, as a server node that stops.
func (p *Peer) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}
