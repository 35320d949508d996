package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
)

// Sessions are the server's (POST /api/v1/auth/login makes them): the console only relays the
// login and its cookie. CSRF tokens are derived from the cookie's secret, which a page of
// another site can neither read nor guess, so they need no storage:
//
//	token = base64(HMAC-SHA256(key: cookie secret, "sundial console csrf"))
//
// Before login the form is protected the same way by a random pre-login cookie.

const (
	// sessionCookie is the cookie the server's login sets (server/auth.go).
	sessionCookie = "sundial_session"
	// loginCookie holds the random secret of the login form's CSRF token.
	loginCookie = "sundial_login"
	csrfField   = "csrf"
	csrfHeader  = "X-CSRF-Token"
)

// user is the signed-in person, as /api/v1/auth/me tells.
type user struct{ api.User }

func (u *user) Admin() bool { return u != nil && u.Role == "admin" }

// Operates says whether the user may change things (an operator or an admin): pages offer
// their forms to them, and the operations refuse the others all the same.
func (u *user) Operates() bool { return u != nil && (u.Role == "admin" || u.Role == "operator") }

type userKey struct{}
type csrfKey struct{}

func userFrom(ctx context.Context) *user {
	u, _ := ctx.Value(userKey{}).(*user)
	return u
}

func csrfFrom(ctx context.Context) string {
	s, _ := ctx.Value(csrfKey{}).(string)
	return s
}

func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("sundial console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK checks an unsafe request's token (form field or htmx header) against secret.
func csrfOK(r *http.Request, secret string) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return secret != "" && got != "" && hmac.Equal([]byte(got), []byte(csrfToken(secret)))
}

// signedIn serves h to a signed-in user (an admin when adminOnly) whose unsafe requests
// carry the CSRF token; anyone else is sent to the login page.
func (c *Console) signedIn(h handlerFunc, adminOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(sessionCookie)
		if err != nil || ck.Value == "" {
			c.toLogin(w, r)
			return
		}
		// The pages call the service layer as the session's person.
		sctx, err := c.srv.SignedIn(r)
		if ae, _ := server.ErrorOf(err); err != nil && ae.Status == http.StatusUnauthorized {
			c.toLogin(w, r)
			return
		} else if err != nil {
			c.fail(w, r, err)
			return
		}
		me, err := c.ops().Me.Execute(sctx, &struct{}{})
		if err != nil {
			c.fail(w, r, err)
			return
		}
		u := user{*me}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				c.fail(w, r, errBadRequest(err.Error()))
				return
			}
		}
		if !csrfOK(r, ck.Value) {
			c.fail(w, r, errForbidden("the form's security token is missing or stale: reload the page and try again"))
			return
		}
		if adminOnly && !u.Admin() {
			c.fail(w, r, errForbidden("this page is for admins"))
			return
		}
		ctx := context.WithValue(sctx, userKey{}, &u)
		ctx = context.WithValue(ctx, csrfKey{}, csrfToken(ck.Value))
		// The error page is the signed-in person's too: it has the menu.
		r = r.WithContext(ctx)
		if err := h(w, r); err != nil {
			c.fail(w, r, err)
		}
	})
}

// toLogin sends the browser to the login page, back to this page afterwards.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request) {
	next := "/"
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") != "true" {
		next = r.URL.RequestURI()
	}
	loc := "/login?next=" + url.QueryEscape(next)
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", loc)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, loc, http.StatusSeeOther)
}

// public serves pages that need no session.
func (c *Console) public(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			c.fail(w, r, err)
		}
	})
}

type loginView struct {
	Next, Username, Error string
	// SSO is the single sign-on start for this page's next, empty without SSO.
	SSO string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) error {
	return c.showLogin(w, r, http.StatusOK, loginView{Next: server.SafeNext(r.URL.Query().Get("next"))})
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, lv loginView) error {
	if c.sso != "" {
		lv.SSO = c.sso + "?next=" + url.QueryEscape(lv.Next)
	}
	ctx := context.WithValue(r.Context(), csrfKey{}, preLoginCSRF(w, r))
	return c.render(w, r.WithContext(ctx), status, "login", &view{Title: "Sign in", Data: lv,
		Flash: flashText(r.URL.Query().Get("done"))})
}

// preLoginCSRF returns the CSRF token of a form shown before login (sign in, password
// reset), setting the random cookie it derives from for the form's path when there is none.
func preLoginCSRF(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(loginCookie); err == nil && len(ck.Value) >= 32 {
		return csrfToken(ck.Value)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	secret := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: secret, Path: r.URL.Path, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return csrfToken(secret)
}

// preLoginCSRFOK checks the token of a form shown before login.
func preLoginCSRFOK(r *http.Request) bool {
	ck, err := r.Cookie(loginCookie)
	return err == nil && csrfOK(r, ck.Value)
}

func (c *Console) loginSubmit(w http.ResponseWriter, r *http.Request) error {
	lv := loginView{Next: server.SafeNext(r.PostFormValue("next")), Username: r.PostFormValue("username")}
	if !preLoginCSRFOK(r) {
		lv.Error = "The sign-in form expired: please try again."
		return c.showLogin(w, r, http.StatusOK, lv)
	}
	// The session cookie is the API's, with its attributes (HttpOnly, SameSite, Secure).
	_, err := c.srv.LogIn(w, r, &api.LoginRequest{Username: lv.Username, Password: r.PostFormValue("password")})
	if ae, _ := server.ErrorOf(err); err != nil && ae.Status < 500 {
		lv.Error = ae.Message
		return c.showLogin(w, r, http.StatusOK, lv)
	}
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/login", MaxAge: -1, HttpOnly: true})
	http.Redirect(w, r, lv.Next, http.StatusSeeOther)
	return nil
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) error {
	if err := c.srv.LogOut(w, r); err != nil {
		return err
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

type accountView struct {
	Errors map[string]string
	Done   bool
}

func (c *Console) accountPage(w http.ResponseWriter, r *http.Request) error {
	return c.render(w, r, http.StatusOK, "account", &view{Title: "Account", Nav: "account", Data: accountView{}})
}

func (c *Console) changePassword(w http.ResponseWriter, r *http.Request) error {
	av := accountView{Errors: map[string]string{}}
	if r.PostFormValue("new_password") != r.PostFormValue("confirm_password") {
		av.Errors["confirm_password"] = "does not match the new password"
		return c.render(w, r, http.StatusOK, "account", &view{Title: "Account", Nav: "account", Data: av})
	}
	_, err := c.ops().ChangePassword.Execute(r.Context(), &api.PasswordRequest{
		CurrentPassword: r.PostFormValue("current_password"), NewPassword: r.PostFormValue("new_password")})
	if fe, ok := fieldErrors(err); ok {
		av.Errors = fe
		return c.render(w, r, http.StatusOK, "account", &view{Title: "Account", Nav: "account", Data: av})
	}
	if err != nil {
		return err
	}
	av.Done = true
	return c.render(w, r, http.StatusOK, "account", &view{Title: "Account", Nav: "account", Data: av, Flash: "Password changed."})
}

// fieldErrors turns the API's 400 into errors by form field (the API's field path; "" for
// the form as a whole). ok is false for any other error.
func fieldErrors(err error) (map[string]string, bool) {
	if err == nil {
		return nil, false
	}
	ae, _ := server.ErrorOf(err)
	if ae.Status >= 500 || ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden {
		return nil, false
	}
	return map[string]string{ae.Field: ae.Message}, true
}
