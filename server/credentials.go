package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// Executor credentials per app: an admin creates or rotates one (the secret is shown once and
// stored hashed, like an API token); an executor presenting it may register into, beat for and
// report about its app only. The global --executor-token still admits executors of any app,
// deprecated: whoever holds it can act as any app's executor.

const credentialPrefix = "sde_"

type appBoundKey struct{}

// appBound is the app whose credential authenticated the executor request; "" for the global
// executor token (any app).
func appBound(ctx context.Context) string {
	app, _ := ctx.Value(appBoundKey{}).(string)
	return app
}

func (s *Server) createCredential(ctx context.Context, in *AppRef) (*api.AppCredential, error) {
	return s.putCredential(ctx, in.Name, false)
}

func (s *Server) rotateCredential(ctx context.Context, in *AppRef) (*api.AppCredential, error) {
	return s.putCredential(ctx, in.Name, true)
}

// putCredential makes or replaces app's credential; the answer carries the secret, the only
// time it is shown.
func (s *Server) putCredential(ctx context.Context, app string, rotate bool) (*api.AppCredential, error) {
	if err := checkAppName(app); err != nil {
		return nil, err
	}
	secret, hash := newSecret(credentialPrefix)
	now := s.clock.Now().UnixMilli()
	c := &store.AppCredential{App: app, Hash: hash, CreatedAt: now}
	action, put := "credential.create", store.Querier.AppCredentialCreate
	if rotate {
		c.RotatedAt, action, put = now, "credential.rotate", store.Querier.AppCredentialRotate
	}
	actx := s.auditedCtx(ctx, action, "app", app, credentialSnapshot(app))
	if err := store.InTx(actx, s.store, func(q store.Querier) error { return put(q, actx, c) }); err != nil {
		return nil, err
	}
	s.log.Info("executor credential set", "app", app, "rotated", rotate)
	out := apiCredential(c)
	out.Secret = secret
	return &out, nil
}

// revokeCredential deletes app's credential: executors presenting it are refused from their
// next request on.
func (s *Server) revokeCredential(ctx context.Context, in *AppRef) (*struct{}, error) {
	if err := checkAppName(in.Name); err != nil {
		return nil, err
	}
	actx := s.auditedCtx(ctx, "credential.revoke", "app", in.Name, credentialSnapshot(in.Name))
	if err := store.InTx(actx, s.store, func(q store.Querier) error { return q.AppCredentialDelete(actx, in.Name) }); err != nil {
		return nil, err
	}
	s.log.Info("executor credential revoked", "app", in.Name)
	return &struct{}{}, nil
}

func (s *Server) listCredentials(ctx context.Context, in *AppRef) (*[]api.AppCredential, error) {
	all, err := s.store.AppCredentialList(ctx)
	if err != nil {
		return nil, err
	}
	out := []api.AppCredential{}
	for _, c := range all {
		if c.App == in.Name {
			out = append(out, apiCredential(c))
		}
	}
	return &out, nil
}

func checkAppName(app string) error {
	if app == "" || len(app) > 190 {
		return invalidField("name", "want an app name of 1 to 190 characters")
	}
	return nil
}

// credentialSnapshot is app's credential as the API shows it (no hash, no secret), for the
// audit log.
func credentialSnapshot(app string) snapshotFunc {
	return func(ctx context.Context, q store.Querier) (any, error) {
		all, err := q.AppCredentialList(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range all {
			if c.App == app {
				return apiCredential(c), nil
			}
		}
		return nil, nil
	}
}

func apiCredential(c *store.AppCredential) api.AppCredential {
	return api.AppCredential{App: c.App, CreatedAt: api.Time(c.CreatedAt), RotatedAt: api.Time(c.RotatedAt)}
}

// executorAuth admits requests carrying an app's executor credential (bound to that app) or
// the global executor token (any app). With neither configured nothing is admitted: an open
// registry would let anyone receive the jobs' parameters.
func (s *Server) executorAuth(h apiHandler) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.cfg.ExecutorCA != nil && !httpserve.VerifiedClient(r) {
			s.rejected.WithLabelValues(rejectNoClientCert).Inc()
			return errNoClientCert
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return errBadExecutorToken
		}
		if strings.HasPrefix(got, credentialPrefix) {
			c, err := s.store.AppCredentialByHash(r.Context(), hashSecret(got))
			if errors.Is(err, store.ErrNotFound) {
				return errBadExecutorToken
			} else if err != nil {
				return err
			}
			if from := senderOf(r); from.app != "" && from.app != c.App {
				s.rejected.WithLabelValues(rejectWrongApp).Inc()
				return errWrongApp(from.app, c.App)
			}
			r = r.WithContext(context.WithValue(r.Context(), appBoundKey{}, c.App))
		} else if s.cfg.ExecutorToken == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.ExecutorToken)) != 1 {
			return errBadExecutorToken
		}
		if err := s.checkProof(r); err != nil {
			return err
		}
		return h(w, r)
	}
}

// checkProof admits a request naming an executor instance only with the proof of that
// instance's key (execsign.VerifyProof): instance ids are listed to every viewer, and the
// credential is the whole app's, so without the proof any holder of the credential could
// report as the instance a run was handed to. A request naming no instance proves nothing
// and is taken for no instance's run.
func (s *Server) checkProof(r *http.Request) error {
	instance := r.Header.Get(wire.HeaderInstance)
	if instance == "" {
		return nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return invalidField("", "request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := execsign.VerifyProof(r, r.URL.Path, body, r.Header.Get(wire.HeaderApp), instance, s.clock.Now()); err != nil {
		s.rejected.WithLabelValues(rejectNoProof).Inc()
		s.log.Warn("refused an executor request without the proof of its instance", "instance", instance, "remote", r.RemoteAddr, "err", err)
		return &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: err.Error()}
	}
	return nil
}

// checkApp refuses a registration for another app than the credential's.
func (s *Server) checkApp(ctx context.Context, app string) error {
	if bound := appBound(ctx); bound != "" && bound != app {
		s.rejected.WithLabelValues(rejectWrongApp).Inc()
		return errWrongApp(app, bound)
	}
	return nil
}

var errNoClientCert = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
	Message: "executor endpoints need a TLS client certificate signed by the executor CA (mutual TLS is on)"}

func errWrongApp(app, bound string) *apiError {
	return &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Message: fmt.Sprintf("app %q: the executor credential is app %q's", app, bound)}
}
