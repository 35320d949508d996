package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// An executor talks to every server node of the cluster it was given, one at a time: the one
// that answered last, and the next in the list as soon as that one cannot answer. Any node
// takes registrations, output and results (they all share one database), so a node's stop or
// crash costs no heartbeat and loses no result.

// serverList checks and joins Config.Server and Config.Servers, without duplicates.
func serverList(server string, servers []string) ([]string, error) {
	var out []string
	for _, s := range append([]string{server}, servers...) {
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("executor: server %q: want an http(s) URL", s)
		}
		if s = strings.TrimRight(s, "/"); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("executor: Server, Token and App are required")
	}
	return out, nil
}

// Instance is the id this executor process registers with: the digest of the key it proves
// itself with, made at New; a restarted executor has a new one.
func (e *Executor) Instance() string { return e.instance }

// Servers are the base URLs of the server nodes the executor uses.
func (e *Executor) Servers() []string { return slices.Clone(e.servers) }

// minServerWait bounds from below how long one server may take to answer before the next is
// tried (see serverWait).
const minServerWait = time.Second

// serverWait is how long one server may take to answer before the next is tried: a heartbeat
// interval, so a frozen node does not cost the executor its registration.
func (e *Executor) serverWait() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return max(e.interval, minServerWait)
}

// post sends in as JSON to path on the server that answered last and, when it cannot answer
// (a network error, a 5xx, no answer within serverWait), on the others in turn. The last one
// tried has the whole of ctx: when every node is slow (the database is away), a call that
// waits for one to recover beats one given up on. A refusal (4xx) is an answer: another node
// would refuse the same. It decodes a JSON answer into out (if not nil).
func (e *Executor) post(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	send := e.postTo
	if e.cfg.Transport == TransportStream {
		send = e.postStream
	}
	start := int(e.server.Load())
	var errs []error
	for i := range e.servers {
		k := (start + i) % len(e.servers)
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if i < len(e.servers)-1 {
			callCtx, cancel = context.WithTimeout(ctx, e.serverWait())
		}
		err := send(callCtx, k, path, body, out)
		cancel()
		if err == nil || permanent(err) {
			if k != start && e.server.CompareAndSwap(int64(start), int64(k)) {
				e.log.Info("moved to another server", "server", e.servers[k], "from", e.servers[start])
			}
			return err
		}
		errs = append(errs, fmt.Errorf("%s: %w", e.servers[k], err))
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// held lists the executions this instance holds: accepted and not finished, or finished with
// a result not delivered yet.
func (e *Executor) held() []int64 {
	e.mu.Lock()
	ids := make([]int64, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if e.rep != nil {
		ids = append(ids, e.rep.pendingIDs()...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
