package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// The access policy: who may do what. Every route declares its Action and, for an action on
// an app's things, how to find the apps it touches (routeTable); guard consults Allow before
// any handler runs, so no route can forget it. TestPolicyWalksRoutes walks the table.

// Action is what a route does, in increasing privilege.
type Action int

const (
	// ActPublic needs no credentials (health, login, the executor protocol).
	ActPublic Action = iota
	// ActSelf is a signed-in user acting on their own account (me, logout, own password,
	// own tokens).
	ActSelf
	// ActRead reads jobs, triggers, executions and their output: every role.
	ActRead
	// ActOperate creates, edits, runs, pauses and deletes jobs and their triggers, kills and
	// retries runs: operators and admins, within their scope.
	ActOperate
	// ActAdmin manages users, credentials, apps, settings and reads the audit log.
	ActAdmin
)

func (a Action) String() string {
	return [...]string{"public", "self", "read", "operate", "admin"}[a]
}

// roleRank orders the roles; an unknown role ranks below every action but self.
func roleRank(r store.Role) Action {
	switch r {
	case store.RoleAdmin:
		return ActAdmin
	case store.RoleOperator:
		return ActOperate
	case store.RoleViewer:
		return ActRead
	}
	return ActSelf
}

// ValidRole reports whether r is a role the policy knows.
func ValidRole(r store.Role) bool { return roleRank(r) > ActSelf }

// Principal is who a request acts for, with the permissions in force: a token's are the
// lesser of its own and its user's.
type Principal struct {
	User *store.User
	Role store.Role
	// Apps is the scope: nil for every app.
	Apps map[string]bool
	// Scripts allows script handlers (admins always may).
	Scripts bool
	// Via is "token" or "session".
	Via       string
	TokenID   int64
	sessionID string // the session's hash, for logout
}

// ParseScope reads a stored scope ("*" or names separated by commas) into a set, nil for
// every app.
func ParseScope(scope string) map[string]bool {
	if scope == "" || scope == store.ScopeAll {
		return nil
	}
	apps := map[string]bool{}
	for _, a := range strings.Split(scope, ",") {
		if a = strings.TrimSpace(a); a != "" {
			apps[a] = true
		}
	}
	return apps
}

// FormatScope writes a scope set as it is stored.
func FormatScope(apps []string) string {
	if len(apps) == 0 || slices.Contains(apps, store.ScopeAll) {
		return store.ScopeAll
	}
	s := slices.Clone(apps)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// newPrincipal is the principal of a user, narrowed by a token when tok is not nil.
func newPrincipal(u *store.User, tok *store.APIToken) *Principal {
	p := &Principal{User: u, Role: u.Role, Apps: ParseScope(u.Scope), Scripts: u.Scripts, Via: "session"}
	if tok == nil {
		return p
	}
	p.Via, p.TokenID = "token", tok.ID
	if tok.Role != "" && roleRank(tok.Role) < roleRank(p.Role) {
		p.Role = tok.Role
	}
	// A token makes script jobs if it was given the permission by a user who has it (admins
	// have it by their role), or if it is an admin's token at the admin role.
	p.Scripts = (u.Scripts || u.Role == store.RoleAdmin) && tok.Scripts || p.Role == store.RoleAdmin
	if ta := ParseScope(tok.Scope); ta != nil {
		if p.Apps == nil {
			p.Apps = ta
		} else {
			both := map[string]bool{}
			for a := range ta {
				if p.Apps[a] {
					both[a] = true
				}
			}
			p.Apps = both
		}
	}
	return p
}

// InScope reports whether app is in the principal's scope. The empty app stands for what
// belongs to no app (calendars, jobs run on the server's nodes): only an unscoped principal
// has it.
func (p *Principal) InScope(app string) bool { return p.Apps == nil || (app != "" && p.Apps[app]) }

// ReadScope is the scope as the store's list filters take it (store.Readable): nil for every
// app.
func (p *Principal) ReadScope() []string {
	if p.Apps == nil {
		return nil
	}
	return scopeList(p.Apps)
}

// Can reports whether the principal may do a on app's things. Reads of what belongs to no app
// (app "") are open to every role; changes to it need an unscoped principal.
func (p *Principal) Can(a Action, app string) bool {
	if roleRank(p.Role) < a {
		return false
	}
	switch a {
	case ActRead:
		return store.Readable(p.ReadScope(), app)
	case ActOperate:
		return p.InScope(app)
	}
	return true
}

// CanScripts reports whether the principal may create or edit jobs with script handlers.
func (p *Principal) CanScripts() bool { return p.Role == store.RoleAdmin || p.Scripts }

// target is what a request acts on, as far as the policy cares.
type target struct {
	apps []string
	// script is set when the request creates or edits a job with a script handler.
	script bool
}

// resolver finds a request's target; a target that does not exist resolves to nothing, and
// the handler answers 404.
type resolver func(s *Server, r *http.Request) (target, error)

// policy is a route's access rule.
type policy struct {
	act Action
	// of finds the apps the request acts on; nil for a route about no app.
	of resolver
	// foreign marks a public route of another scheduler's protocol (XXL-JOB's admin API),
	// whose bodies are what its programs send: they need not say JSON (checkPublicWrite).
	foreign bool
	// op marks a route of the service layer (endpoint.go): its Execute decides access, the
	// guard only authenticates.
	op bool
}

var (
	publicRoute = policy{act: ActPublic}
	xxlRoute    = policy{act: ActPublic, foreign: true}
	selfRoute   = policy{act: ActSelf}
)

func read(of resolver) policy { return policy{act: ActRead, of: of} }

var (
	errNeedsScripts = &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Message: "jobs with script handlers need the scripts permission, which an admin grants"}
	errOutOfScope = &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Message: store.ErrOutOfScope.Error()}
)

// allow checks the principal against a raw route's policy (one the service layer does not
// serve); nil means go ahead.
func (s *Server) allow(p *Principal, pol policy, r *http.Request) error {
	var of func(context.Context) (target, error)
	if pol.of != nil {
		of = func(context.Context) (target, error) { return pol.of(s, r) }
	}
	return authorize(r.Context(), p, pol.act, of)
}

// authorize is the access rule: the principal's role must reach act, and every app the
// request acts on (found by of; nil for a request about no app) must be in its scope for
// act; a script handler needs the scripts permission. nil means go ahead.
func authorize(ctx context.Context, p *Principal, act Action, of func(context.Context) (target, error)) error {
	if err := roleAllows(p, act); err != nil {
		return err
	}
	if of == nil {
		if act == ActOperate && !p.Can(ActOperate, "") {
			return errOutOfScope
		}
		return nil
	}
	t, err := of(ctx)
	if err != nil {
		return err
	}
	for _, app := range t.apps {
		if !p.Can(act, app) {
			return errOutOfScope
		}
	}
	if t.script && !p.CanScripts() {
		return errNeedsScripts
	}
	return nil
}

// roleAllows is the first part of the rule, which needs no request: the principal's role
// must reach act.
func roleAllows(p *Principal, act Action) error {
	if roleRank(p.Role) < act {
		return &apiError{Status: http.StatusForbidden, Code: "permission_denied",
			Message: "this needs the " + act.String() + " permission; you are " + string(p.Role)}
	}
	return nil
}

// jobTarget resolves a job's app and whether it has a script handler.
func jobTarget(ctx context.Context, q store.Querier, id int64) (target, error) {
	j, err := q.JobGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, nil
	}
	if err != nil {
		return target{}, err
	}
	return target{apps: []string{j.App}, script: sundial.IsScriptHandler(j.Handler)}, nil
}

// jobIDTarget is the job of a request naming one (running, pausing or deleting it).
func (s *Server) jobIDTarget(ctx context.Context, id int64) (target, error) {
	t, err := jobTarget(ctx, s.store, id)
	t.script = false // running or pausing a script job changes no script
	return t, err
}

// byJobQuery is the job of the query's job_id, when there is one (one job's report).
func byJobQuery(s *Server, r *http.Request) (target, error) {
	id, err := queryID(r, "job_id")
	if err != nil || id == 0 {
		return target{}, err
	}
	t, err := jobTarget(r.Context(), s.store, id)
	t.script = false
	return t, err
}

// newJob is a job request: a job created in its app.
func newJob(_ context.Context, in *api.JobRequest) (target, error) {
	return target{apps: []string{in.App}, script: sundial.IsScriptHandler(in.Handler)}, nil
}

// editJob is the job changed and the app it moves to; a script job, before or after, needs
// the scripts permission.
func (s *Server) editJob(ctx context.Context, in *JobChange) (target, error) {
	cur, err := jobTarget(ctx, s.store, in.ID)
	if err != nil {
		return target{}, err
	}
	return target{apps: append(cur.apps, in.App), script: cur.script || sundial.IsScriptHandler(in.Handler)}, nil
}

// triggerTarget is the job of trigger id.
func (s *Server) triggerTarget(ctx context.Context, id int64) (target, error) {
	t, err := s.store.TriggerGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, nil
	}
	if err != nil {
		return target{}, err
	}
	return s.jobIDTarget(ctx, t.JobID)
}

// byExecution is the job of the execution in the path's {id}.
func byExecution(s *Server, r *http.Request) (target, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return target{}, err
	}
	return s.executionTarget(r.Context(), id)
}

// executionTarget is the job of execution id; an execution whose job is gone belongs to no
// app.
func (s *Server) executionTarget(ctx context.Context, id int64) (target, error) {
	x, err := s.store.ExecutionGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return target{}, nil
	}
	if err != nil {
		return target{}, err
	}
	jt, err := jobTarget(ctx, s.store, x.JobID)
	if err == nil && jt.apps == nil {
		jt.apps = []string{""}
	}
	jt.script = false
	return jt, err
}
