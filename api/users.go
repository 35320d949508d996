package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// ListUsers lists the users (admins only).
func (c *Client) ListUsers(ctx context.Context, o ListOptions) (*Page[User], error) {
	return get[Page[User]](ctx, c, v1+"/users", o.query())
}

// FindUser returns the user called name; a missing user is the API's 404.
func (c *Client) FindUser(ctx context.Context, name string) (*User, error) {
	pg, err := get[Page[User]](ctx, c, v1+"/users", url.Values{"name": {name}})
	if err != nil {
		return nil, err
	}
	if len(pg.Items) == 0 {
		return nil, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("user %q not found", name)}
	}
	return &pg.Items[0], nil
}

// CreateUser creates a user with a password that passes the strength check.
func (c *Client) CreateUser(ctx context.Context, req UserRequest) (*User, error) {
	return post[User](ctx, c, "POST", v1+"/users", req)
}

// GetUser returns a user.
func (c *Client) GetUser(ctx context.Context, id int64) (*User, error) {
	return get[User](ctx, c, idPath("/users", id, ""), nil)
}

// UpdateUser changes a user's role, scope, scripts permission or disabled flag.
func (c *Client) UpdateUser(ctx context.Context, id int64, req UserUpdate) (*User, error) {
	return post[User](ctx, c, "PATCH", idPath("/users", id, ""), req)
}

// ResetPassword makes a one-time password reset token for a user and ends their sessions.
func (c *Client) ResetPassword(ctx context.Context, id int64) (*PasswordReset, error) {
	return post[PasswordReset](ctx, c, "POST", idPath("/users", id, "/reset-password"), struct{}{})
}

// RedeemReset sets a new password with a reset token; it needs no other credentials.
func (c *Client) RedeemReset(ctx context.Context, req ResetRequest) error {
	return c.call(ctx, "POST", v1+"/auth/reset", nil, req, nil)
}

// AuditFilter selects audit entries; zero fields select everything.
type AuditFilter struct {
	Actor, Action, TargetKind, Target string
	// From and To bound the time (RFC 3339; inclusive, exclusive).
	From, To string
	ListOptions
}

// ListAudit lists audit entries newest first (admins only); Page.Next continues the list.
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) (*Page[AuditEntry], error) {
	q := f.query()
	for k, v := range map[string]string{"actor": f.Actor, "action": f.Action, "target_kind": f.TargetKind,
		"target": f.Target, "from": f.From, "to": f.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return get[Page[AuditEntry]](ctx, c, v1+"/audit", q)
}
