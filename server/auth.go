package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// Authentication. Two credentials open the API:
//
//   - API tokens ("Authorization: Bearer sdl_..."), created by an admin through the API and
//     shown once. They are 256-bit random secrets, so a plain SHA-256 of the secret is a safe
//     lookup key; a slow hash would only add latency to every request.
//   - Console sessions: POST /api/v1/auth/login with a user's password (bcrypt) sets an
//     HttpOnly, SameSite=Lax cookie holding another random secret, stored hashed the same
//     way (Lax, so a link from an alarm e-mail opens the console signed in). Unsafe requests
//     carried by the cookie must come from the server's own origin; the console's forms also
//     carry its CSRF token (package web).
//
// There are no default credentials: the first start of a database creates the admin with a
// random password and prints it once (EnsureAdmin).

const (
	sessionCookie = "sundial_session"
	tokenPrefix   = "sdl_"
)

// bcryptCost is bcrypt's work factor; tests lower it, since the race detector makes each
// hash take seconds.
var bcryptCost = bcrypt.DefaultCost

type principalKey struct{}

// PrincipalFrom returns whom the request acts for (nil on a public route).
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

func principalFrom(ctx context.Context) *Principal { return PrincipalFrom(ctx) }

// authStore is what authentication needs from the store.
type authStore interface {
	UserGet(ctx context.Context, id int64) (*store.User, error)
	UserGetByName(ctx context.Context, name string) (*store.User, error)
	UserInsert(ctx context.Context, u *store.User) error
	UserSetPassword(ctx context.Context, id int64, hash string) error
	APITokenGetByHash(ctx context.Context, hash string) (*store.APIToken, error)
	APITokenTouch(ctx context.Context, id, at, minInterval int64) error
	SessionGet(ctx context.Context, hash string) (*store.Session, error)
	SessionInsert(ctx context.Context, s *store.Session) error
	SessionDelete(ctx context.Context, hash string) error
	SessionsDeleteExpired(ctx context.Context, now int64) (int64, error)
}

type authenticator struct {
	store      authStore
	sessionTTL time.Duration
	clock      clock.Clock
	log        *slog.Logger
	// cost is bcrypt's work factor for new passwords; dummy, of the same cost, stands in
	// for the hash of a user name that does not exist. It is made on the first login, not
	// in New: a hash costs ~100 ms, and most servers (tests, benchmarks) never see a login;
	// only that first unknown-name login takes twice as long.
	cost      int
	dummyOnce sync.Once
	dummy     []byte
}

func (a *authenticator) dummyHash() []byte {
	a.dummyOnce.Do(func() {
		a.dummy, _ = bcrypt.GenerateFromPassword([]byte("sundial-no-such-user"), a.cost) // New checked the cost
	})
	return a.dummy
}

// newSecret returns a random secret with the given prefix and the hex SHA-256 to store.
func newSecret(prefix string) (secret, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	secret = prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, hashSecret(secret)
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// tokenTouchInterval is how stale a token's last use may be before a request records it.
const tokenTouchInterval = int64(time.Minute / time.Millisecond)

// authenticate finds the principal of a request, or returns nil. A request that presents a
// credential which does not work is not authenticated, even if it has another; nor is a
// disabled user's.
func (a *authenticator) authenticate(r *http.Request) (*Principal, error) {
	now := a.clock.Now().UnixMilli()
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(secret, tokenPrefix) {
			return nil, nil
		}
		tok, err := a.store.APITokenGetByHash(r.Context(), hashSecret(secret))
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if tok.ExpiresAt != 0 && tok.ExpiresAt <= now {
			return nil, nil
		}
		u, err := a.store.UserGet(r.Context(), tok.UserID)
		if err != nil || u.Disabled {
			return nil, ignoreNotFound(err)
		}
		if err := a.store.APITokenTouch(r.Context(), tok.ID, now, tokenTouchInterval); err != nil {
			a.log.Warn("record token use", "token", tok.ID, "err", err)
		}
		return newPrincipal(u, tok), nil
	}
	return a.authenticateSession(r)
}

// authenticateSession finds the principal of r's session cookie, or returns nil.
func (a *authenticator) authenticateSession(r *http.Request) (*Principal, error) {
	now := a.clock.Now().UnixMilli()
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	hash := hashSecret(c.Value)
	sess, err := a.store.SessionGet(r.Context(), hash)
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	if sess.ExpiresAt <= now {
		return nil, nil
	}
	u, err := a.store.UserGet(r.Context(), sess.UserID)
	if err != nil || u.Disabled {
		return nil, ignoreNotFound(err)
	}
	p := newPrincipal(u, nil)
	p.sessionID = hash
	return p, nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// sameOrigin protects cookie-authenticated writes from cross-site requests: browsers send
// Origin (or Sec-Fetch-Site) with them, and it must name this server.
func sameOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

var errCrossOrigin = &apiError{Status: http.StatusForbidden, Code: "permission_denied",
	Message: "cross-origin request: this route takes requests from this server's own pages or from programs only"}

// checkPublicWrite guards the public routes that change something (login, password reset, the
// executor protocol) against requests a page of another site makes the browser send: a form
// posting a login as text/plain would sign the browser in to the attacker's account (login
// CSRF). They must come from this origin (or a program, which sends no Origin) and, when
// json is set, be JSON, which a cross-site form cannot send and a cross-site script cannot
// without a CORS preflight this server never grants. (XXL-JOB's admin API is exempt from the
// JSON rule: its executors' bodies are what they are, and each call carries the app's access
// token in a header, which no cross-site page can set either.)
func checkPublicWrite(r *http.Request, json bool) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if !sameOrigin(r) {
		return errCrossOrigin
	}
	if !json {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Code: api.CodeInvalidArgument, Field: "Content-Type",
			Message: fmt.Sprintf("want application/json, got %q", r.Header.Get("Content-Type"))}
	}
	return nil
}

// guard wraps a route's handler with its policy: the one place access is decided.
func (s *Server) guard(pol policy, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkRequestText(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if pol.act == ActPublic {
			if err := checkPublicWrite(r, !pol.foreign); err != nil {
				s.writeError(w, r, err)
				return
			}
			r = r.WithContext(Anonymous(r))
		} else {
			p, err := s.auth.authenticate(r)
			if err != nil {
				s.writeError(w, r, fmt.Errorf("authenticate: %w", err))
				return
			}
			if p == nil {
				s.writeError(w, r, errUnauthenticated)
				return
			}
			if p.Via == "session" && !sameOrigin(r) {
				s.writeError(w, r, errCrossOrigin)
				return
			}
			if !pol.op {
				if err := s.allow(p, pol, r); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			r = r.WithContext(withCaller(r.Context(), p, r.RemoteAddr))
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// EnsureAdmin creates the admin user name with a random password if no user of that name
// exists, and returns the password. created is false (and password empty) when the user
// existed: the password is shown once, on the start that made it. The unique user name
// makes this safe when several nodes start at once on an empty database.
func EnsureAdmin(ctx context.Context, st authStore, name string) (password string, created bool, err error) {
	if _, err := st.UserGetByName(ctx, name); err == nil {
		return "", false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", false, fmt.Errorf("look up admin %q: %w", name, err)
	}
	password = randomPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return "", false, fmt.Errorf("hash admin password: %w", err)
	}
	err = st.UserInsert(ctx, &store.User{Name: name, PasswordHash: string(hash), Role: store.RoleAdmin})
	if errors.Is(err, store.ErrAlreadyExists) {
		return "", false, nil // another node won the race and printed its password
	}
	if err != nil {
		return "", false, fmt.Errorf("create admin %q: %w", name, err)
	}
	return password, true, nil
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var req api.LoginRequest
	if err := decodeOp(r, &req); err != nil {
		return err
	}
	out, err := s.LogIn(w, r, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// LogIn checks a user's password and opens a console session, setting its cookie on w: the
// login of the API (POST /api/v1/auth/login) and of the console's sign-in page alike. A
// session is HTTP's own (a cookie), so this operation takes the request and its answer.
func (s *Server) LogIn(w http.ResponseWriter, r *http.Request, req *api.LoginRequest) (*api.User, error) {
	if err := checkInput(req); err != nil {
		return nil, err
	}
	if req.Username == "" {
		return nil, invalidField("username", "must not be empty")
	}
	addr := sourceAddress(r)
	if wait, by := s.logins.check(req.Username, addr); wait > 0 {
		s.log.Warn("login limited", "user", req.Username, "remote", r.RemoteAddr, "by", by, "wait", wait)
		retryAfter(w, wait)
		return nil, errLoginLimited(wait)
	}
	u, err := s.store.UserGetByName(r.Context(), req.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	// An unknown name is checked against a stand-in hash of the same cost, so that the
	// answer's time does not tell which names exist.
	var hash []byte
	if u != nil && u.PasswordHash != "" { // a single sign-on user has no password
		hash = []byte(u.PasswordHash)
	}
	var mismatch error
	if err := s.logins.hash(r.Context(), func() {
		if hash == nil {
			hash = s.auth.dummyHash()
		}
		mismatch = bcrypt.CompareHashAndPassword(hash, []byte(req.Password))
	}); err != nil {
		return nil, err
	}
	if mismatch != nil || u == nil || u.PasswordHash == "" || u.Disabled {
		s.logins.failed(req.Username, addr)
		s.log.Warn("failed login", "user", req.Username, "remote", r.RemoteAddr)
		a := &store.Audit{Actor: req.Username, Source: r.RemoteAddr, Action: "auth.login_failed", TargetKind: "user", Target: req.Username}
		if err := store.InTx(store.WithAudit(r.Context(), a), s.store, func(store.Querier) error { return nil }); err != nil {
			s.log.Warn("audit failed login", "err", err)
		}
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "wrong user name or password"}
	}
	s.logins.succeeded(req.Username, addr)
	if err := s.startSession(w, r, u, "auth.login"); err != nil {
		return nil, err
	}
	s.log.Info("login", "user", u.Name, "remote", r.RemoteAddr)
	out := userOut(u)
	out.Via = "session"
	return &out, nil
}

// startSession opens a console session for u and sets its cookie; the session and the
// audit entry of the login (action) are written in one transaction.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u *store.User, action string) error {
	now := s.clock.Now()
	if _, err := s.store.SessionsDeleteExpired(r.Context(), now.UnixMilli()); err != nil {
		s.log.Warn("delete expired sessions", "err", err)
	}
	secret, h := newSecret("")
	exp := now.Add(s.cfg.SessionTTL)
	a := &store.Audit{Actor: u.Name, Source: r.RemoteAddr, Action: action, TargetKind: "user", Target: strconv.FormatInt(u.ID, 10)}
	err := store.InTx(store.WithAudit(r.Context(), a), s.store, func(q store.Querier) error {
		return q.SessionInsert(r.Context(), &store.Session{Hash: h, UserID: u.ID, ExpiresAt: exp.UnixMilli()})
	})
	if err != nil {
		return fmt.Errorf("login %q: %w", u.Name, err)
	}
	httpserve.NoStore(w)
	// Lax, not Strict: Strict would leave the cookie off every request of a navigation that
	// started on another site, so a single sign-on (the provider redirects to ssoCallback,
	// which sets this cookie and redirects on to the console: one cross-site chain) and a
	// link from an alarm e-mail would land on a signed-out console. Lax sends it on top-level
	// GETs only, which change nothing; every other request a session carries must come from
	// this origin (guard), and the console's forms carry a CSRF token besides.
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", Expires: exp,
		MaxAge: int(s.cfg.SessionTTL.Seconds()), HttpOnly: true, Secure: s.cfg.TrustedProxies.Secure(r), SameSite: http.SameSiteLaxMode})
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.LogOut(w, r); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// LogOut ends the caller's session (the principal in r's context) and clears its cookie on w:
// the API's logout and the console's.
func (s *Server) LogOut(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if p == nil {
		return errUnauthenticated
	}
	if p.Via == "session" {
		if err := s.store.SessionDelete(r.Context(), p.sessionID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: s.cfg.TrustedProxies.Secure(r), SameSite: http.SameSiteLaxMode})
	return nil
}

func (s *Server) me(ctx context.Context, _ *struct{}) (*api.User, error) {
	p := principalFrom(ctx)
	out := userOut(p.User)
	// What the credential allows, which for a token may be less than its user.
	out.Role, out.Scope, out.Scripts, out.Via = string(p.Role), scopeList(p.Apps), p.CanScripts(), p.Via
	return &out, nil
}

// changePassword changes the caller's own password and ends their other sessions.
func (s *Server) changePassword(ctx context.Context, req *api.PasswordRequest) (*struct{}, error) {
	p := principalFrom(ctx)
	var mismatch error
	if err := s.logins.hash(ctx, func() {
		mismatch = bcrypt.CompareHashAndPassword([]byte(p.User.PasswordHash), []byte(req.CurrentPassword))
	}); err != nil {
		return nil, err
	}
	if mismatch != nil {
		return nil, invalidField("current_password", "does not match")
	}
	if subtle.ConstantTimeCompare([]byte(req.NewPassword), []byte(req.CurrentPassword)) == 1 {
		return nil, invalidField("new_password", "must differ from the current password")
	}
	ctx = s.auditedCtx(ctx, "user.password", "user", strconv.FormatInt(p.User.ID, 10), nil)
	if err := s.setPassword(ctx, p.User, "new_password", req.NewPassword, p.sessionID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
