package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
)

// The users and API tokens page is an admin's: every change is an operation of the users and
// tokens API (their validation, their messages at the fields). The tokens listed are the
// signed-in admin's own, as the API's tokens are each user's.

type usersView struct {
	Users  []api.User
	Tokens []api.Token
	// Created is a token just made: its secret is shown this once.
	Created *api.Token
	// UserForm is the new-user form, TokenForm the new-token form.
	UserForm  Form
	TokenForm Form
	Roles     [][2]string
}

var roleOptions = [][2]string{{"viewer", "viewer: reads everything, changes nothing"},
	{"operator", "operator: runs and edits the jobs of its apps"}, {"admin", "admin: everything, users included"}}

// The inputs of the users page's forms, by the API field each shows the errors of.
var (
	userFields  = []string{"name", "password", "role", "scope", "scripts"}
	accessField = []string{"role", "scope", "scripts", "disabled"}
	tokenFields = []string{"name", "expires_at"}
	resetFields = []string{"token", "new_password", "confirm_password"}
)

func newForm(v url.Values, fields []string) Form {
	if v == nil {
		v = url.Values{}
	}
	return Form{Values: v, Errors: map[string]string{}, Fields: fields}
}

func (c *Console) usersPage(w http.ResponseWriter, r *http.Request) error {
	return c.showUsers(w, r, http.StatusOK, usersView{UserForm: newForm(url.Values{"role": {"viewer"}}, userFields), TokenForm: newForm(nil, tokenFields)},
		flashText(r.URL.Query().Get("done")))
}

func (c *Console) showUsers(w http.ResponseWriter, r *http.Request, status int, uv usersView, flash string) error {
	users, err := c.ops().ListUsers.Execute(r.Context(), &server.UserQuery{Limit: 1000})
	if err != nil {
		return err
	}
	tokens, err := c.ops().ListTokens.Execute(r.Context(), &server.TokenQuery{Limit: 1000})
	if err != nil {
		return err
	}
	uv.Users, uv.Tokens, uv.Roles = users.Items, tokens.Items, roleOptions
	return c.render(w, r, status, "users", &view{Title: "Users & API tokens", Nav: "users", Data: uv, Flash: flash})
}

// scopeField reads a scope input: app names separated by commas or spaces; empty or * is
// every app.
func scopeField(s string) []string {
	apps := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	if len(apps) == 0 {
		return []string{"*"}
	}
	return apps
}

// userCreate makes a user through POST /api/v1/users.
func (c *Console) userCreate(w http.ResponseWriter, r *http.Request) error {
	uv := usersView{UserForm: newForm(r.PostForm, userFields), TokenForm: newForm(nil, tokenFields)}
	req := api.UserRequest{Name: r.PostFormValue("name"), Password: r.PostFormValue("password"),
		Role: r.PostFormValue("role"), Scope: scopeField(r.PostFormValue("scope")), Scripts: r.PostFormValue("scripts") == "true"}
	_, err := c.ops().CreateUser.Execute(r.Context(), &req)
	if showAtField(err, uv.UserForm.Errors) {
		uv.UserForm.Values.Del("password")
		return c.showUsers(w, r, http.StatusOK, uv, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/users?done=user-created", http.StatusSeeOther)
	return nil
}

type userView struct {
	User api.User
	Form Form
	// Reset is a password reset just made: its one-time token is shown this once.
	Reset *api.PasswordReset
	Roles [][2]string
	// Self is the signed-in admin's own account, which the page does not let them lock out.
	Self bool
}

func (c *Console) userPage(w http.ResponseWriter, r *http.Request) error {
	return c.showUser(w, r, http.StatusOK, nil, nil, flashText(r.URL.Query().Get("done")))
}

func (c *Console) showUser(w http.ResponseWriter, r *http.Request, status int, form *Form, reset *api.PasswordReset, flash string) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	u, err := c.ops().GetUser.Execute(r.Context(), &server.UserRef{ID: id})
	if err != nil {
		return err
	}
	uv := userView{User: *u, Reset: reset, Roles: roleOptions, Self: userFrom(r.Context()).ID == u.ID}
	if form != nil {
		uv.Form = *form
	} else {
		uv.Form = newForm(url.Values{"role": {u.Role}, "scope": {strings.Join(u.Scope, ", ")},
			"scripts": {fmt.Sprint(u.Scripts)}, "disabled": {fmt.Sprint(u.Disabled)}}, accessField)
	}
	return c.render(w, r, status, "user", &view{Title: "User " + u.Name, Nav: "users", Data: uv, Flash: flash})
}

// userUpdate changes a user's role, scope, scripts permission and disabled flag through
// PATCH /api/v1/users/{id}.
func (c *Console) userUpdate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	role, scope := r.PostFormValue("role"), scopeField(r.PostFormValue("scope"))
	scripts, disabled := r.PostFormValue("scripts") == "true", r.PostFormValue("disabled") == "true"
	form := newForm(r.PostForm, accessField)
	_, err = c.ops().UpdateUser.Execute(r.Context(), &server.UserChange{ID: id,
		UserUpdate: api.UserUpdate{Role: &role, Scope: &scope, Scripts: &scripts, Disabled: &disabled}})
	if showAtField(err, form.Errors) {
		return c.showUser(w, r, http.StatusOK, &form, nil, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/users/%d?done=user-saved", id), http.StatusSeeOther)
	return nil
}

// userReset makes a one-time password reset token and shows it once: the user sets a new
// password with it on the console's reset page.
func (c *Console) userReset(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	reset, err := c.ops().ResetPassword.Execute(r.Context(), &server.UserRef{ID: id})
	if err != nil {
		return err
	}
	return c.showUser(w, r, http.StatusOK, nil, reset, "")
}

// tokensPage is where the token list used to be: it is part of the users page now.
func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/users#tokens", http.StatusSeeOther)
	return nil
}

// tokenCreate makes a token through the API and shows its secret once; the page is not
// cached and a reload does not show it again.
func (c *Console) tokenCreate(w http.ResponseWriter, r *http.Request) error {
	uv := usersView{UserForm: newForm(url.Values{"role": {"viewer"}}, userFields), TokenForm: newForm(r.PostForm, tokenFields)}
	body := api.TokenRequest{Name: r.PostFormValue("token-name"), ExpiresAt: r.PostFormValue("expires_at")}
	tok, err := c.ops().CreateToken.Execute(r.Context(), &body)
	if showAtField(err, uv.TokenForm.Errors) {
		return c.showUsers(w, r, http.StatusOK, uv, "")
	}
	if err != nil {
		return err
	}
	uv.Created = tok
	uv.TokenForm.Values = url.Values{}
	return c.showUsers(w, r, http.StatusOK, uv, "")
}

func (c *Console) tokenDelete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().DeleteToken.Execute(r.Context(), &server.TokenRef{ID: id}); err != nil {
		return err
	}
	http.Redirect(w, r, "/users?done=token-deleted#tokens", http.StatusSeeOther)
	return nil
}

// resetPage lets a user whose admin reset their password set a new one with the one-time
// token (POST /api/v1/auth/reset); it needs no session.
func (c *Console) resetPage(w http.ResponseWriter, r *http.Request) error {
	return c.showReset(w, r, http.StatusOK, newForm(url.Values{"token": {r.URL.Query().Get("token")}}, resetFields), "")
}

func (c *Console) showReset(w http.ResponseWriter, r *http.Request, status int, form Form, flash string) error {
	return c.execute(w, status, "reset", "layout", &view{Title: "Set a new password", CSRF: preLoginCSRF(w, r), Data: form, Flash: flash})
}

func (c *Console) resetSubmit(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return errBadRequest(err.Error())
	}
	form := newForm(r.PostForm, resetFields)
	if !preLoginCSRFOK(r) {
		form.Errors[""] = "The form expired: please try again."
		return c.showReset(w, r, http.StatusOK, form, "")
	}
	if r.PostFormValue("new_password") != r.PostFormValue("confirm_password") {
		form.Errors["confirm_password"] = "does not match the new password"
		return c.showReset(w, r, http.StatusOK, form, "")
	}
	_, err := c.ops().RedeemReset.Execute(server.Anonymous(r), &api.ResetRequest{Token: r.PostFormValue("token"),
		NewPassword: r.PostFormValue("new_password")})
	if showAtField(err, form.Errors) {
		return c.showReset(w, r, http.StatusOK, form, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/login?done=password-reset", http.StatusSeeOther)
	return nil
}
