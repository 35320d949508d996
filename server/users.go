package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// resetTTL is how long a password reset token works.
const resetTTL = 24 * time.Hour

// scopeList is a scope set as the API shows it.
func scopeList(apps map[string]bool) []string {
	if apps == nil {
		return []string{store.ScopeAll}
	}
	out := make([]string, 0, len(apps))
	for a := range apps {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

func userOut(u *store.User) api.User {
	return api.User{ID: u.ID, Name: u.Name, Role: string(u.Role), Scope: scopeList(ParseScope(u.Scope)),
		Scripts: u.Scripts || u.Role == store.RoleAdmin, Disabled: u.Disabled, CreatedAt: api.Time(u.CreatedAt),
		UpdatedAt: api.Time(u.UpdatedAt)}
}

// userSnapshot is the audit log's view of a user: no password hash, no reset token.
func userSnapshot(id int64) func(ctx context.Context, q store.Querier) (any, error) {
	return func(ctx context.Context, q store.Querier) (any, error) {
		u, err := q.UserGet(ctx, id)
		if err != nil {
			return nil, err
		}
		return userOut(u), nil
	}
}

func checkRole(field, role string) (store.Role, error) {
	if !ValidRole(store.Role(role)) {
		return "", invalidField(field, "want admin, operator or viewer, got %q", role)
	}
	return store.Role(role), nil
}

func checkScope(field string, apps []string) (string, error) {
	for i, a := range apps {
		if a == "" {
			return "", invalidField(fmt.Sprintf("%s[%d]", field, i), "must not be empty")
		}
	}
	return FormatScope(apps), nil
}

// UserRef names a user by id.
type UserRef struct {
	ID int64 `json:"-"`
}

// UserChange changes user ID's access.
type UserChange struct {
	ID int64 `json:"-"`
	api.UserUpdate
}

// UserQuery is a page of users by id; Name is the one user of that name.
type UserQuery struct {
	Name  string `json:"name"`
	After int64  `json:"after"`
	Limit int    `json:"limit"`
}

func (s *Server) createUser(ctx context.Context, in *api.UserRequest) (*api.User, error) {
	if err := sundial.CheckName("name", in.Name); err != nil {
		return nil, err
	}
	role, err := checkRole("role", in.Role)
	if err != nil {
		return nil, err
	}
	scope, err := checkScope("scope", in.Scope)
	if err != nil {
		return nil, err
	}
	hash, err := s.hashPassword(ctx, "password", in.Password, in.Name)
	if err != nil {
		return nil, err
	}
	u := &store.User{Name: in.Name, PasswordHash: hash, Role: role, Scope: scope, Scripts: in.Scripts}
	ctx = s.auditedCtx(ctx, "user.create", "user", "", nil)
	store.AuditFrom(ctx).Snapshot = func(ctx context.Context, q store.Querier) (any, error) {
		if u.ID == 0 {
			return nil, nil
		}
		store.AuditFrom(ctx).Target = strconv.FormatInt(u.ID, 10)
		return userSnapshot(u.ID)(ctx, q)
	}
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.UserInsert(ctx, u) }); err != nil {
		return nil, fmt.Errorf("create user %q: %w", in.Name, err)
	}
	out := userOut(u)
	return &out, nil
}

func writeUserCreated(w http.ResponseWriter, _ *http.Request, u *api.User) error {
	w.Header().Set("Location", "/api/v1/users/"+strconv.FormatInt(u.ID, 10))
	writeJSON(w, http.StatusCreated, u)
	return nil
}

// listUsers lists users by id; ?name= is the one user of that name, as a page of zero or one.
func (s *Server) listUsers(ctx context.Context, in *UserQuery) (*api.Page[api.User], error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	after := in.After
	if name := in.Name; name != "" {
		page := api.Page[api.User]{Items: []api.User{}}
		u, err := s.store.UserGetByName(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		case u.ID > after:
			page.Items = append(page.Items, userOut(u))
		}
		return &page, nil
	}
	us, err := s.store.UserList(ctx, after, limit+1)
	if err != nil {
		return nil, err
	}
	page := paginate(us, limit, func(u *store.User) string { return strconv.FormatInt(u.ID, 10) }, userOut)
	return &page, nil
}

func readUserQuery(r *http.Request, in *UserQuery) (err error) {
	in.Name = r.URL.Query().Get("name")
	in.Limit, in.After, err = idPage(r)
	return err
}

func readUserRef(r *http.Request, in *UserRef) (err error) {
	in.ID, err = pathID(r, "id")
	return err
}

func readUserChange(r *http.Request, in *UserChange) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	return decodeOp(r, &in.UserUpdate)
}

func (s *Server) getUser(ctx context.Context, in *UserRef) (*api.User, error) {
	u, err := s.store.UserGet(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	out := userOut(u)
	return &out, nil
}

// updateUser changes a user's role, scope, scripts permission or disabled flag. Disabling a
// user or lowering their role ends their sessions: a session must not outlive the rights it
// was opened with. An admin cannot demote or disable themselves, so one admin always stays.
func (s *Server) updateUser(ctx context.Context, in *UserChange) (*api.User, error) {
	id := in.ID
	self := principalFrom(ctx).User.ID == id
	ctx = s.auditedCtx(ctx, "user.update", "user", strconv.FormatInt(id, 10), userSnapshot(id))
	var out *store.User
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		u, err := q.UserGet(ctx, id)
		if err != nil {
			return err
		}
		narrowed := false
		if in.Role != nil {
			role, err := checkRole("role", *in.Role)
			if err != nil {
				return err
			}
			if self && role != u.Role {
				return invalidField("role", "you cannot change your own role: another admin can")
			}
			narrowed = narrowed || roleRank(role) < roleRank(u.Role)
			u.Role = role
		}
		if in.Scope != nil {
			scope, err := checkScope("scope", *in.Scope)
			if err != nil {
				return err
			}
			narrowed = narrowed || scope != u.Scope
			u.Scope = scope
		}
		if in.Scripts != nil {
			narrowed = narrowed || u.Scripts && !*in.Scripts
			u.Scripts = *in.Scripts
		}
		if in.Disabled != nil {
			if self && *in.Disabled {
				return invalidField("disabled", "you cannot disable yourself")
			}
			narrowed = narrowed || *in.Disabled
			u.Disabled = *in.Disabled
		}
		if err := q.UserUpdate(ctx, u); err != nil {
			return err
		}
		out = u
		if narrowed {
			_, err = q.SessionsDeleteUser(ctx, id, "")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	uo := userOut(out)
	return &uo, nil
}

// resetPassword makes a one-time reset token for the user, shown once, and ends their
// sessions; the old password keeps working until the token is redeemed.
func (s *Server) resetPassword(ctx context.Context, in *UserRef) (*api.PasswordReset, error) {
	id := in.ID
	secret, hash := newSecret("sdr_")
	exp := s.clock.Now().Add(resetTTL)
	ctx = s.auditedCtx(ctx, "user.reset_password", "user", strconv.FormatInt(id, 10), userSnapshot(id))
	err := store.InTx(ctx, s.store, func(q store.Querier) error {
		u, err := q.UserGet(ctx, id)
		if err != nil {
			return err
		}
		u.ResetHash, u.ResetExpiresAt = hash, exp.UnixMilli()
		if err := q.UserUpdate(ctx, u); err != nil {
			return err
		}
		_, err = q.SessionsDeleteUser(ctx, id, "")
		return err
	})
	if err != nil {
		return nil, err
	}
	return &api.PasswordReset{Token: secret, ExpiresAt: api.TimeOf(exp)}, nil
}

// redeemReset sets a new password with a reset token.
func (s *Server) redeemReset(ctx context.Context, in *api.ResetRequest) (*struct{}, error) {
	u, err := s.store.UserGetByResetHash(ctx, hashSecret(in.Token))
	if err != nil || u.ResetExpiresAt <= s.clock.Now().UnixMilli() || u.Disabled {
		if err := ignoreNotFound(err); err != nil {
			return nil, err
		}
		return nil, invalidField("token", "is not a valid reset token (expired, used, or never made)")
	}
	ctx = store.WithAudit(ctx, &store.Audit{Actor: u.Name, Source: sourceFrom(ctx), Action: "user.password",
		TargetKind: "user", Target: strconv.FormatInt(u.ID, 10)})
	if err := s.setPassword(ctx, u, "new_password", in.NewPassword, ""); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
