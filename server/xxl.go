package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// The XXL-JOB admin API that XXL-JOB executors call (registry, registryRemove, callback),
// so that they run Sundial's jobs unchanged: only their admin address and token change. It
// is served under the context path (default /xxl-job-admin, the 2.x admin's) and at /
// (3.4.1 and later). Every answer is HTTP 200 with XXL-JOB's envelope in the caller's
// generation; errors travel in its code, as XXL-JOB executors expect.
//
// Authentication is the app's own access token (XXL-JOB-ACCESS-TOKEN): the app is named by
// XXL-JOB-APPNAME (3.5), by the registry key (older executors' registrations), or by the
// job of each callback's log id (older executors' callbacks). An app that is not xxl-job, has
// no token, or is unknown admits nothing.

// DefaultXXLContextPath is the XXL-JOB 2.x admin's context path, where executors configured
// for it look.
const DefaultXXLContextPath = "/xxl-job-admin"

// xxlMaxBody bounds an XXL-JOB request: a callback batch with long messages.
const xxlMaxBody = 5 << 20

// xxlRoutes serves the XXL-JOB admin API at the context path and at /.
func (s *Server) xxlRoutes() {
	prefixes := []string{""}
	if s.cfg.XXLContextPath != "" {
		prefixes = append(prefixes, s.cfg.XXLContextPath)
	}
	for _, p := range prefixes {
		s.mux.Handle("POST "+p+xxljob.PathRegistry, s.guard(xxlRoute, s.xxlRegistry(false)))
		s.mux.Handle("POST "+p+xxljob.PathRegistryRemove, s.guard(xxlRoute, s.xxlRegistry(true)))
		s.mux.Handle("POST "+p+xxljob.PathCallback, s.guard(xxlRoute, s.xxlCallback))
	}
}

// xxlReply writes an answer in gen's envelope ("" when the caller's app is unknown: both).
func xxlReply(w http.ResponseWriter, gen xxljob.Generation, code int, msg string) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(xxljob.EncodeReply(gen, xxljob.Reply{Code: code, Msg: msg}))
}

// xxlApps resolves and authenticates the apps of one request, caching each app's verdict.
type xxlApps struct {
	s     *Server
	token string
	seen  map[string]*store.App // nil: refused
}

func (s *Server) newXXLApps(r *http.Request) *xxlApps {
	return &xxlApps{s: s, token: r.Header.Get(xxljob.HeaderToken), seen: map[string]*store.App{}}
}

// errXXLToken is a refused token, answered as XXL-JOB does.
//
//lint:ignore ST1005 the text is XXL-JOB's own answer, which its executors match
var errXXLToken = errors.New(xxljob.MsgWrongToken)

// admit returns the app if it is an xxl-job app whose token the request carries.
func (a *xxlApps) admit(ctx context.Context, name string) (*store.App, error) {
	if app, ok := a.seen[name]; ok {
		if app == nil {
			return nil, errXXLToken
		}
		return app, nil
	}
	app, err := a.s.store.AppGet(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	ok := err == nil && app.Protocol == store.ProtocolXXLJob && app.XXLTokenHash != "" && a.token != "" &&
		subtle.ConstantTimeCompare([]byte(hashSecret(a.token)), []byte(app.XXLTokenHash)) == 1
	if !ok {
		a.seen[name] = nil
		return nil, errXXLToken
	}
	a.seen[name] = app
	return app, nil
}

// byToken is the one xxl-job app whose token the request carries; nil if none or several.
func (a *xxlApps) byToken(ctx context.Context) (*store.App, error) {
	if a.token == "" {
		return nil, nil
	}
	all, err := a.s.store.AppList(ctx)
	if err != nil {
		return nil, err
	}
	var found *store.App
	h := []byte(hashSecret(a.token))
	for _, app := range all {
		if app.Protocol == store.ProtocolXXLJob && subtle.ConstantTimeCompare(h, []byte(app.XXLTokenHash)) == 1 {
			if found != nil {
				return nil, nil
			}
			found = app
		}
	}
	return found, nil
}

// readXXL reads the body of an XXL-JOB request (non-empty, as XXL-JOB's admin requires).
func readXXL(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, xxlMaxBody))
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, errors.New("empty body")
	}
	return b, nil
}

// xxlRegistry is /api/registry (the executor's heartbeat, every 30 s) and, with remove,
// /api/registryRemove. The instance lands in the one registry native executors use: it is
// listed with the app's executors, routed to, and swept after three silent beats.
func (s *Server) xxlRegistry(remove bool) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, err := readXXL(r)
		if err != nil {
			xxlReply(w, "", xxljob.CodeFail, "Illegal Argument.")
			return nil
		}
		var p xxljob.RegistryParam
		if err := json.Unmarshal(body, &p); err != nil || p.RegistryGroup == "" || p.RegistryKey == "" || p.RegistryValue == "" {
			xxlReply(w, "", xxljob.CodeFail, "Illegal Argument.")
			return nil
		}
		ctx := r.Context()
		name := p.RegistryKey
		if h := r.Header.Get(xxljob.HeaderAppName); h != "" && h != name {
			s.log.Warn("XXL-JOB registration for another app than its XXL-JOB-APPNAME", "app", h, "registry_key", name, "remote", r.RemoteAddr)
			xxlReply(w, "", xxljob.CodeFail, xxljob.MsgWrongToken)
			return nil
		}
		app, err := s.newXXLApps(r).admit(ctx, name)
		if errors.Is(err, errXXLToken) {
			s.log.Warn("XXL-JOB executor refused: wrong or missing access token, or not an xxl-job app", "app", name, "remote", r.RemoteAddr)
			xxlReply(w, "", xxljob.CodeFail, xxljob.MsgWrongToken)
			return nil
		} else if err != nil {
			return err
		}
		gen := xxljob.Generation(app.ProtocolVersion)
		addr := strings.TrimSuffix(p.RegistryValue, "/")
		if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
			xxlReply(w, gen, xxljob.CodeFail, "Illegal Argument.")
			return nil
		}
		if remove {
			if _, err := s.store.RegistryLeave(ctx, name, addr); err != nil {
				return err
			}
			s.log.Info("XXL-JOB executor left", "app", name, "address", addr)
		} else if err := s.register(r, name, addr, func() error {
			return s.store.RegistryBeatFor(ctx, name, addr, "", nil, dispatch.LiveIntervals*dispatch.XXLBeatInterval)
		}); err != nil {
			if ae, known := ErrorOf(err); !known || ae.Status >= 500 {
				return err
			}
			s.log.Warn("XXL-JOB executor registration refused", "app", name, "address", addr, "err", err)
			xxlReply(w, gen, xxljob.CodeFail, "Illegal Argument.")
			return nil
		}
		xxlReply(w, gen, xxljob.CodeOK, "")
		return nil
	}
}

// xxlCallback is /api/callback: the results of runs. A callback for an unknown log id, for
// a run that has ended, or sent twice is answered with success and changes nothing (the
// executor retries its callbacks from its files); a run already declared lost takes it as a
// late result (engine.CompleteRemote). Before a result is recorded, the run's whole output is
// pulled from the executor, so that a follower of the output sees every line before the end.
func (s *Server) xxlCallback(w http.ResponseWriter, r *http.Request) error {
	body, err := readXXL(r)
	if err != nil {
		xxlReply(w, "", xxljob.CodeFail, "Illegal Argument.")
		return nil
	}
	cbs, shape, err := xxljob.DecodeCallbacks(body)
	if err != nil {
		xxlReply(w, "", xxljob.CodeFail, "Illegal Argument.")
		return nil
	}
	ctx := r.Context()
	apps := s.newXXLApps(r)
	// The reply's generation: the app's, once one is known; a 3.5-shaped body is 3.5.
	var gen xxljob.Generation
	if shape == xxljob.Gen35 {
		gen = xxljob.Gen35
	}
	if h := r.Header.Get(xxljob.HeaderAppName); h != "" {
		app, err := apps.admit(ctx, h)
		if errors.Is(err, errXXLToken) {
			xxlReply(w, gen, xxljob.CodeFail, xxljob.MsgWrongToken)
			return nil
		} else if err != nil {
			return err
		}
		gen = xxljob.Generation(app.ProtocolVersion)
	}
	var results []engine.RemoteResult
	now := s.clock.Now()
	for _, cb := range cbs {
		x, err := s.store.ExecutionGet(ctx, cb.LogID)
		if errors.Is(err, store.ErrNotFound) {
			continue // an unknown log id: nothing to record
		} else if err != nil {
			return err
		}
		job, err := s.store.JobGet(ctx, x.JobID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		app, err := apps.admit(ctx, job.App)
		if errors.Is(err, errXXLToken) {
			s.log.Warn("XXL-JOB callback refused: wrong access token for the run's app", "execution", x.ID, "app", job.App, "remote", r.RemoteAddr)
			xxlReply(w, gen, xxljob.CodeFail, xxljob.MsgWrongToken)
			return nil
		} else if err != nil {
			return err
		}
		if gen == "" || gen == xxljob.Gen33 {
			gen = xxljob.Generation(app.ProtocolVersion)
		}
		if x.State.Terminal() && x.State != store.ExecLost {
			continue // ended (a duplicate, or killed here first): no change; a lost run takes it late
		}
		if x.State == store.ExecRunning && x.ExecutorAddress != "" {
			s.pullFinalXXL(ctx, app, x)
		}
		started, finished := serverTimes(x.StartedAt, x.FiredAt, now)
		results = append(results, engine.RemoteResult{ExecutionID: x.ID, State: store.ExecutionState(xxljob.Outcome(cb.HandleCode, cb.HandleMsg)),
			Code: cb.HandleCode, Message: cb.HandleMsg, Started: started, Finished: finished})
	}
	if len(results) > 0 {
		if _, err := s.sched.Engine().CompleteRemote(ctx, results); err != nil {
			return fmt.Errorf("XXL-JOB callback: %w", err)
		}
	}
	if gen == "" || gen == xxljob.Gen33 {
		// Only unknown log ids from an executor that does not name its app (≤3.4): its
		// token names it, if it is one app's.
		if app, err := apps.byToken(ctx); err != nil {
			return err
		} else if app != nil {
			gen = xxljob.Generation(app.ProtocolVersion)
		}
	}
	xxlReply(w, gen, xxljob.CodeOK, "")
	return nil
}

// pullFinalXXL reads the run's whole output from its executor; a failure only costs output.
func (s *Server) pullFinalXXL(ctx context.Context, app *store.App, x *store.Execution) {
	xc, err := s.remote.XXLClient(app)
	if err == nil {
		err = s.remote.FinalXXLOutput(ctx, xc, x.ExecutorAddress, x.ID, x.FiredAt)
	}
	if err != nil {
		s.log.Warn("pulling the output of an ended XXL-JOB run", "execution", x.ID, "executor", x.ExecutorAddress, "err", err)
	}
}
