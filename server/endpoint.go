package server

import (
	"context"
	"net/http"

	"github.com/sundial-scheduler/sundial"
)

// The service layer. Every operation the API and the console share is an Endpoint: a typed
// request and answer, the action it is (policy.go) and how to find the apps a request
// touches. Execute is the one place an operation's access is decided, for both callers: the
// API's route binds HTTP to it (bindHTTP: the path, query and body into the request, the
// answer into JSON), and the console (package web) calls it in process with the signed-in
// person's principal in the context. Errors are values (*api.Error, store's and schedule's
// errors) that ErrorOf turns into the API's error shape and HTTP status, in one place.

// Endpoint is one operation of the service layer.
type Endpoint[Req, Resp any] struct {
	s   *Server
	act Action
	// of finds the apps (and whether a script handler) the request acts on; nil for an
	// operation about no app.
	of   func(ctx context.Context, req *Req) (target, error)
	exec func(ctx context.Context, req *Req) (*Resp, error)
}

// Execute runs the operation for the principal in ctx, refusing it to a caller without one
// (errUnauthenticated) or without the permission and scope it needs.
func (e *Endpoint[Req, Resp]) Execute(ctx context.Context, req *Req) (*Resp, error) {
	// The request's text is checked first, whoever sent it: a NUL reaching PostgreSQL is a 500.
	check := checkInput
	if e.act == ActRead {
		check = checkQuery
	}
	if err := check(req); err != nil {
		return nil, err
	}
	p := PrincipalFrom(ctx)
	if p == nil && e.act != ActPublic {
		return nil, errUnauthenticated
	}
	if e.act != ActPublic {
		var of func(context.Context) (target, error)
		if e.of != nil {
			of = func(ctx context.Context) (target, error) { return e.of(ctx, req) }
		}
		if err := authorize(ctx, p, e.act, of); err != nil {
			return nil, err
		}
	}
	return e.exec(ctx, req)
}

// Allows says whether the principal in ctx may run the operation on req (nil) without
// running it, by the rule Execute applies: a page offers an action only to those the
// operation would not refuse.
func (e *Endpoint[Req, Resp]) Allows(ctx context.Context, req *Req) error {
	p := PrincipalFrom(ctx)
	if p == nil {
		return errUnauthenticated
	}
	if e.act == ActPublic {
		return nil
	}
	var of func(context.Context) (target, error)
	if e.of != nil {
		of = func(ctx context.Context) (target, error) { return e.of(ctx, req) }
	}
	return authorize(ctx, p, e.act, of)
}

// endpoint makes an operation of s.
func endpoint[Req, Resp any](s *Server, act Action, of func(context.Context, *Req) (target, error),
	exec func(context.Context, *Req) (*Resp, error)) *Endpoint[Req, Resp] {
	return &Endpoint[Req, Resp]{s: s, act: act, of: of, exec: exec}
}

// bindHTTP is the API's route of an operation: read fills the request from the HTTP request
// (path, query, body: its errors name the field), write sends the answer. The route's guard
// has authenticated the caller; Execute decides what they may do.
func bindHTTP[Req, Resp any](e *Endpoint[Req, Resp], read func(r *http.Request, req *Req) error,
	write func(w http.ResponseWriter, r *http.Request, resp *Resp) error) apiHandler {
	return func(w http.ResponseWriter, r *http.Request) error {
		// A caller whose role falls short is refused before the request is read, so the
		// answer tells them nothing of its form (Execute checks the whole rule).
		if p := PrincipalFrom(r.Context()); p != nil && e.act != ActPublic {
			if err := roleAllows(p, e.act); err != nil {
				return err
			}
		}
		var req Req
		if read != nil {
			if err := read(r, &req); err != nil {
				return err
			}
		}
		resp, err := e.Execute(r.Context(), &req)
		if err != nil {
			return err
		}
		return write(w, r, resp)
	}
}

// route is the route table's entry of an operation bound to HTTP.
func opRoute[Req, Resp any](method, path string, e *Endpoint[Req, Resp], read func(*http.Request, *Req) error,
	write func(http.ResponseWriter, *http.Request, *Resp) error) route {
	return route{method: method, path: path, pol: policy{act: e.act, op: true}, h: bindHTTP(e, read, write)}
}

// jsonStatus writes an answer as JSON with status.
func jsonStatus[T any](status int) func(http.ResponseWriter, *http.Request, *T) error {
	return func(w http.ResponseWriter, _ *http.Request, v *T) error {
		writeJSON(w, status, v)
		return nil
	}
}

// writeOK answers 200 with the answer in the API's form.
func writeOK[T, U any](conv func(*T) U) func(http.ResponseWriter, *http.Request, *T) error {
	return func(w http.ResponseWriter, _ *http.Request, v *T) error {
		writeJSON(w, http.StatusOK, conv(v))
		return nil
	}
}

// noContent answers 204.
func noContent[T any](w http.ResponseWriter, _ *http.Request, _ *T) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type sourceKey struct{}

// withCaller is ctx acting for p, from the network address source (the audit log's source).
func withCaller(ctx context.Context, p *Principal, source string) context.Context {
	// What the scheduler checks beyond an operation's own target (a job's child jobs) is
	// checked against the same principal.
	ctx = sundial.WithMayRun(ctx, func(app string) bool { return p.Can(ActOperate, app) })
	return context.WithValue(context.WithValue(ctx, principalKey{}, p), sourceKey{}, source)
}

// sourceFrom is the caller's network address.
func sourceFrom(ctx context.Context) string {
	s, _ := ctx.Value(sourceKey{}).(string)
	return s
}

// SignedIn returns r's context acting for the person whose console session r carries (the
// session cookie: a console page takes no bearer token), for calling the operations in
// process. It returns an error ErrorOf shows as 401 when there is no live session.
func (s *Server) SignedIn(r *http.Request) (context.Context, error) {
	p, err := s.auth.authenticateSession(r)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errUnauthenticated
	}
	return withCaller(r.Context(), p, r.RemoteAddr), nil
}

// readBody reads a request that is the whole JSON body.
func readBody[T any](r *http.Request, in *T) error { return decodeOp(r, in) }

// Anonymous returns r's context for a public operation (a password reset's redemption): no
// principal, r's network address for the audit log.
func Anonymous(r *http.Request) context.Context {
	return context.WithValue(r.Context(), sourceKey{}, r.RemoteAddr)
}
