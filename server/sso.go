package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// Single sign-on with OpenID Connect (authorization code flow with PKCE). The console's
// "Sign in with SSO" goes to GET /api/v1/auth/sso/login, which sends the browser to the
// identity provider; the provider sends it back to GET /api/v1/auth/sso/callback with a
// code, exchanged for an ID token whose signature, issuer, audience, expiry and nonce are
// checked. The token's groups are mapped to a role and a scope (OIDCConfig.RoleMap); the
// user is made on the first login and its role and scope follow the groups on each later
// one. The login opens the same session as a password login, in an audited transaction.

// OIDCConfig turns on single sign-on. Issuer, ClientID and RedirectURL are required.
type OIDCConfig struct {
	// Issuer is the identity provider's issuer URL; its discovery document is read at the
	// first sign-in (not at start, so a provider that is down does not stop the server).
	Issuer string
	// ClientID and ClientSecret are this server's registration at the provider.
	ClientID, ClientSecret string
	// RedirectURL is this server's callback as the provider knows it:
	// https://sundial.example.com/api/v1/auth/sso/callback.
	RedirectURL string
	// GroupsClaim names the ID token claim holding the user's groups. Default "groups".
	GroupsClaim string
	// RoleMap maps groups to a role and scope (ParseOIDCRoleMap). A user in no mapped group
	// is refused.
	RoleMap []OIDCRule
	// HTTPClient talks to the provider. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
}

// OIDCRule gives the members of Group the role, in the scope of Apps (nil: every app).
type OIDCRule struct {
	Group string
	Role  store.Role
	Apps  []string
}

// ParseOIDCRoleMap reads rules "group=role[:app,app…]" separated by ';', e.g.
// "ops=operator:app1,app2;admins=admin;staff=viewer".
func ParseOIDCRoleMap(s string) ([]OIDCRule, error) {
	var rules []OIDCRule
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		group, grant, ok := strings.Cut(part, "=")
		group = strings.TrimSpace(group)
		if !ok || group == "" {
			return nil, fmt.Errorf("role map %q: want group=role[:app,app…]", part)
		}
		role, apps, _ := strings.Cut(grant, ":")
		r := OIDCRule{Group: group, Role: store.Role(strings.TrimSpace(role))}
		if !ValidRole(r.Role) {
			return nil, fmt.Errorf("role map %q: role %q: want admin, operator or viewer", part, role)
		}
		for _, a := range strings.Split(apps, ",") {
			if a = strings.TrimSpace(a); a != "" {
				r.Apps = append(r.Apps, a)
			}
		}
		if r.Role == store.RoleAdmin && len(r.Apps) > 0 {
			return nil, fmt.Errorf("role map %q: admin covers every app; give it no apps", part)
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, errors.New("role map: no rule (want group=role[:app,app…];…)")
	}
	return rules, nil
}

// grant returns the role and scope the groups earn: the strongest role any of them maps
// to, in the union of the scopes of the rules that give that role; ok is false when no
// group is mapped.
func grant(rules []OIDCRule, groups []string) (role store.Role, scope string, ok bool) {
	var apps []string
	all := false
	for _, r := range rules {
		if !slices.Contains(groups, r.Group) {
			continue
		}
		switch {
		case !ok || roleRank(r.Role) > roleRank(role):
			role, ok, apps, all = r.Role, true, slices.Clone(r.Apps), len(r.Apps) == 0
		case r.Role == role:
			apps, all = append(apps, r.Apps...), all || len(r.Apps) == 0
		}
	}
	if !ok {
		return "", "", false
	}
	if all {
		return role, store.ScopeAll, true
	}
	return role, FormatScope(apps), true
}

// sso is the server's single sign-on, nil when it is not configured.
type sso struct {
	cfg OIDCConfig
	mu  sync.Mutex
	// set once discovery succeeded
	verifier *oidc.IDTokenVerifier
	oauth    *oauth2.Config
}

func newSSO(cfg *OIDCConfig) (*sso, error) {
	if cfg == nil {
		return nil, nil
	}
	c := *cfg
	if c.Issuer == "" || c.ClientID == "" || c.RedirectURL == "" {
		return nil, errors.New("server: OIDC needs an issuer, a client id and a redirect URL")
	}
	if len(c.RoleMap) == 0 {
		return nil, errors.New("server: OIDC needs a role map: without one no user could sign in")
	}
	if c.GroupsClaim == "" {
		c.GroupsClaim = "groups"
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &sso{cfg: c}, nil
}

// provider reads the provider's discovery document once it answers.
func (p *sso) provider() (*oidc.IDTokenVerifier, *oauth2.Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.verifier != nil {
		return p.verifier, p.oauth, nil
	}
	// The provider keeps this context for fetching its signing keys later: it must outlive
	// the request that happens to be first.
	ctx := oidc.ClientContext(context.Background(), p.cfg.HTTPClient)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	prov, err := oidc.NewProvider(dctx, p.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("OIDC discovery at %s: %w", p.cfg.Issuer, err)
	}
	p.verifier = oidc.NewVerifier(p.cfg.Issuer, oidc.NewRemoteKeySet(ctx, jwksURL(prov)), &oidc.Config{ClientID: p.cfg.ClientID})
	p.oauth = &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, RedirectURL: p.cfg.RedirectURL,
		Endpoint: prov.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	return p.verifier, p.oauth, nil
}

func jwksURL(p *oidc.Provider) string {
	var c struct {
		JWKS string `json:"jwks_uri"`
	}
	_ = p.Claims(&c) // decoded already by NewProvider
	return c.JWKS
}

// ssoCookie carries the login's state, nonce, PKCE verifier and return page from the
// redirect to the provider to the callback.
const (
	ssoCookie     = "sundial_sso"
	ssoCookiePath = "/api/v1/auth/sso"
	ssoCookieTTL  = 10 * time.Minute
)

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errSSOOff = &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "single sign-on is not configured (--oidc-issuer)"}

// ssoLogin sends the browser to the identity provider.
func (s *Server) ssoLogin(w http.ResponseWriter, r *http.Request) error {
	if s.sso == nil {
		return errSSOOff
	}
	_, oc, err := s.sso.provider()
	if err != nil {
		return &apiError{Status: http.StatusBadGateway, Code: "unavailable", Message: err.Error()}
	}
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	next := base64.RawURLEncoding.EncodeToString([]byte(SafeNext(r.URL.Query().Get("next"))))
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: strings.Join([]string{state, nonce, verifier, next}, "."),
		Path: ssoCookiePath, MaxAge: int(ssoCookieTTL.Seconds()), HttpOnly: true, Secure: s.cfg.TrustedProxies.Secure(r),
		SameSite: http.SameSiteLaxMode}) // Lax: the provider's redirect back is a top-level GET
	httpserve.NoStore(w)
	http.Redirect(w, r, oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
	return nil
}

// ssoCallback finishes a sign-in: checks the provider's answer, makes or updates the user
// and opens a session.
func (s *Server) ssoCallback(w http.ResponseWriter, r *http.Request) error {
	if s.sso == nil {
		return errSSOOff
	}
	denied := func(who, why string) error {
		s.log.Warn("failed single sign-on", "user", who, "remote", r.RemoteAddr, "why", why)
		a := &store.Audit{Actor: who, Source: r.RemoteAddr, Action: "auth.login_failed", TargetKind: "user", Target: who}
		if err := store.InTx(store.WithAudit(r.Context(), a), s.store, func(store.Querier) error { return nil }); err != nil {
			s.log.Warn("audit failed login", "err", err)
		}
		return &apiError{Status: http.StatusForbidden, Code: "permission_denied", Message: "single sign-on refused: " + why}
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return denied("", fmt.Sprintf("the identity provider answered %s: %s", e, q.Get("error_description")))
	}
	ck, err := r.Cookie(ssoCookie)
	parts := []string{}
	if err == nil {
		parts = strings.Split(ck.Value, ".")
	}
	// The cookie is spent whatever happens next: a code works once.
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: ssoCookiePath, MaxAge: -1, HttpOnly: true,
		Secure: s.cfg.TrustedProxies.Secure(r), SameSite: http.SameSiteLaxMode})
	if len(parts) != 4 || subtle.ConstantTimeCompare([]byte(parts[0]), []byte(q.Get("state"))) != 1 {
		return invalidField("state", "does not match this browser's sign-in: start again from the login page")
	}
	nonce, verifier := parts[1], parts[2]
	next := "/"
	if b, err := base64.RawURLEncoding.DecodeString(parts[3]); err == nil {
		next = SafeNext(string(b))
	}
	idv, oc, err := s.sso.provider()
	if err != nil {
		return &apiError{Status: http.StatusBadGateway, Code: "unavailable", Message: err.Error()}
	}
	ctx := oidc.ClientContext(r.Context(), s.sso.cfg.HTTPClient)
	tok, err := oc.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return denied("", fmt.Sprintf("the code exchange failed: %v", err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return denied("", "the token response has no ID token")
	}
	idt, err := idv.Verify(ctx, raw)
	if err != nil {
		return denied("", fmt.Sprintf("the ID token does not verify: %v", err))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return denied("", "the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return denied("", fmt.Sprintf("the ID token's claims: %v", err))
	}
	name := claimString(claims, "preferred_username")
	if name == "" {
		name = claimString(claims, "email")
	}
	if name == "" {
		name = idt.Subject
	}
	if err := checkText("username", name, true); err != nil {
		return denied(name, fmt.Sprintf("the user name %q is not one Sundial takes: %v", name, err))
	}
	if err := sundial.CheckName("username", name); err != nil {
		return denied(name, fmt.Sprintf("the user name %q is not one Sundial takes: %v", name, err))
	}
	groups := claimStrings(claims, s.sso.cfg.GroupsClaim)
	role, scope, ok := grant(s.sso.cfg.RoleMap, groups)
	if !ok {
		return denied(name, fmt.Sprintf("none of the groups %v in claim %q is mapped to a role (--oidc-role-map)", groups, s.sso.cfg.GroupsClaim))
	}
	subject := idt.Issuer + "|" + idt.Subject
	u, err := s.ssoUser(r, name, subject, role, scope)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return denied(name, ae.Message)
		}
		return err
	}
	if err := s.startSession(w, r, u, "auth.sso_login"); err != nil {
		return err
	}
	s.log.Info("single sign-on", "user", u.Name, "role", u.Role, "scope", u.Scope, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// ssoUser makes the user of a first sign-in, or brings its role and scope in line with its
// groups, in an audited transaction (before and after show the change).
func (s *Server) ssoUser(r *http.Request, name, subject string, role store.Role, scope string) (*store.User, error) {
	var u *store.User
	a := &store.Audit{Actor: name, Source: r.RemoteAddr, Action: "user.sso_sync", TargetKind: "user", Target: name,
		Snapshot: func(ctx context.Context, q store.Querier) (any, error) {
			cur, err := q.UserGetByName(ctx, name)
			if err != nil {
				return nil, err
			}
			store.AuditFrom(ctx).Target = strconv.FormatInt(cur.ID, 10)
			return userOut(cur), nil
		}}
	err := store.InTx(store.WithAudit(r.Context(), a), s.store, func(q store.Querier) error {
		cur, err := q.UserGetByName(r.Context(), name)
		if errors.Is(err, store.ErrNotFound) {
			u = &store.User{Name: name, Role: role, Scope: scope, SSOSubject: subject}
			return q.UserInsert(r.Context(), u)
		}
		if err != nil {
			return err
		}
		switch {
		case cur.SSOSubject != subject:
			// A local user, or another identity that signed in under this name first.
			return &apiError{Status: http.StatusForbidden, Message: fmt.Sprintf("the user name %q belongs to another account", name)}
		case cur.Disabled:
			return &apiError{Status: http.StatusForbidden, Message: fmt.Sprintf("user %q is disabled", name)}
		}
		u = cur
		if cur.Role == role && cur.Scope == scope {
			return nil
		}
		u.Role, u.Scope = role, scope
		return q.UserUpdate(r.Context(), u)
	})
	return u, err
}

func claimString(claims map[string]any, name string) string {
	s, _ := claims[name].(string)
	return s
}

// claimStrings reads a claim that is a list of strings or one string.
func claimStrings(claims map[string]any, name string) []string {
	switch v := claims[name].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// SafeNext keeps a post-login redirect on this site (the console's and single sign-on's).
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
