package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// parseTime reads an RFC 3339 time from input field.
func parseTime(field, v string) (time.Time, error) { return api.ParseTime(field, v) }

func tokenOut(t *store.APIToken) api.Token {
	return api.Token{ID: t.ID, UserID: t.UserID, Name: t.Name, Prefix: t.Prefix, Role: string(t.Role),
		Scope: scopeList(ParseScope(t.Scope)), Scripts: t.Scripts, CreatedAt: api.Time(t.CreatedAt),
		ExpiresAt: api.Time(t.ExpiresAt), LastUsedAt: api.Time(t.LastUsedAt)}
}

// createToken makes a token for the caller, whose role, scope and scripts permission may
// narrow the caller's but never widen them.
// TokenRef names an API token by id.
type TokenRef struct {
	ID int64 `json:"-"`
}

// TokenQuery is a page of the caller's tokens (everyone's for an admin) by id.
type TokenQuery struct {
	After int64 `json:"after"`
	Limit int   `json:"limit"`
}

func (s *Server) createToken(ctx context.Context, req *api.TokenRequest) (*api.Token, error) {
	p := principalFrom(ctx)
	if req.Name == "" {
		return nil, invalidField("name", "must not be empty: say what the token is for")
	}
	var role store.Role
	if req.Role != "" {
		var err error
		if role, err = checkRole("role", req.Role); err != nil {
			return nil, err
		}
		if roleRank(role) > roleRank(p.Role) {
			return nil, invalidField("role", "%s is above your own role, %s", role, p.Role)
		}
	}
	scope, err := checkScope("scope", req.Scope)
	if err != nil {
		return nil, err
	}
	for _, app := range req.Scope {
		if app != store.ScopeAll && !p.InScope(app) {
			return nil, invalidField("scope", "app %q is outside your own scope", app)
		}
	}
	if scope == store.ScopeAll && p.Apps != nil {
		scope = FormatScope(scopeList(p.Apps)) // a scoped user's token is no wider than its user
	}
	if req.Scripts && !p.CanScripts() {
		return nil, invalidField("scripts", "you do not have the scripts permission to give")
	}
	var exp int64
	if req.ExpiresAt != "" {
		t, err := parseTime("expires_at", req.ExpiresAt)
		if err != nil {
			return nil, err
		}
		if !t.After(s.clock.Now()) {
			return nil, invalidField("expires_at", "%s is in the past", req.ExpiresAt)
		}
		exp = t.UnixMilli()
	}
	secret, hash := newSecret(tokenPrefix)
	tok := &store.APIToken{UserID: p.User.ID, Name: req.Name, Hash: hash, Prefix: secret[:len(tokenPrefix)+6],
		Role: role, Scope: scope, Scripts: req.Scripts, ExpiresAt: exp}
	ctx = s.auditedCtx(ctx, "token.create", "token", "", func(ctx context.Context, q store.Querier) (any, error) {
		if tok.ID == 0 {
			return nil, nil
		}
		store.AuditFrom(ctx).Target = strconv.FormatInt(tok.ID, 10)
		return tokenOut(tok), nil
	})
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.APITokenInsert(ctx, tok) }); err != nil {
		return nil, err
	}
	s.log.Info("api token created", "token", tok.ID, "name", tok.Name, "by", p.User.Name)
	out := tokenOut(tok)
	out.Token = secret
	return &out, nil
}

// ownTokens is whose tokens the caller sees and deletes: everyone's for an admin, else their
// own.
func ownTokens(p *Principal) int64 {
	if p.Role == store.RoleAdmin {
		return 0
	}
	return p.User.ID
}

func (s *Server) listTokens(ctx context.Context, in *TokenQuery) (*api.Page[api.Token], error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	toks, err := s.store.APITokenList(ctx, ownTokens(principalFrom(ctx)), in.After, limit+1)
	if err != nil {
		return nil, err
	}
	page := paginate(toks, limit, func(t *store.APIToken) string { return strconv.FormatInt(t.ID, 10) }, tokenOut)
	return &page, nil
}

func readTokenQuery(r *http.Request, in *TokenQuery) (err error) {
	in.Limit, in.After, err = idPage(r)
	return err
}

func readTokenRef(r *http.Request, in *TokenRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

func (s *Server) deleteToken(ctx context.Context, in *TokenRef) (*struct{}, error) {
	id := in.ID
	p := principalFrom(ctx)
	ctx = s.auditedCtx(ctx, "token.delete", "token", strconv.FormatInt(id, 10), tokenSnapshot(id))
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		if owner := ownTokens(p); owner != 0 {
			toks, err := q.APITokenList(ctx, owner, id-1, 1)
			if err != nil {
				return err
			}
			if len(toks) == 0 || toks[0].ID != id {
				return notFound("token %d: not found among your tokens", id)
			}
		}
		return q.APITokenDelete(ctx, id)
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("api token deleted", "token", id, "by", p.User.Name)
	return &struct{}{}, nil
}

// writeSecret answers a secret shown once: no cache keeps it.
func writeSecret[T any](status int) func(http.ResponseWriter, *http.Request, *T) error {
	return func(w http.ResponseWriter, _ *http.Request, v *T) error {
		httpserve.NoStore(w)
		writeJSON(w, status, v)
		return nil
	}
}
