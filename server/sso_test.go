package server

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// fakeIdP is an OpenID Connect provider over a real socket: discovery, JWKS, an authorize
// endpoint that grants the identity the test set, and a token endpoint that checks the client
// secret and the PKCE verifier and returns an RS256-signed ID token. A real provider cannot
// run here; this one speaks the protocol go-oidc and x/oauth2 use.
type fakeIdP struct {
	t      *testing.T
	url    string
	key    *rsa.PrivateKey
	signer *rsa.PrivateKey // signs ID tokens: key, or another to forge one
	mu     sync.Mutex
	user   idpUser
	codes  map[string]idpGrant
	// badNonce makes ID tokens carry another nonce than the sign-in's.
	badNonce bool
}

type idpUser struct {
	sub, name string
	groups    []string
}

type idpGrant struct {
	user             idpUser
	nonce, challenge string
}

const (
	idpClientID     = "sundial"
	idpClientSecret = "client-secret-of-sundial"
)

func newFakeIdP(t *testing.T) *fakeIdP {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeIdP{t: t, key: key, signer: key, codes: map[string]idpGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"issuer": p.url, "authorization_endpoint": p.url + "/authorize",
			"token_endpoint": p.url + "/token", "jwks_uri": p.url + "/jwks", "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != idpClientID || q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" {
			t.Errorf("authorize request %v", q)
		}
		code := randomToken()
		p.mu.Lock()
		p.codes[code] = idpGrant{user: p.user, nonce: q.Get("nonce"), challenge: q.Get("code_challenge")}
		p.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		if id != idpClientID || secret != idpClientSecret {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		p.mu.Lock()
		g, ok := p.codes[r.PostFormValue("code")]
		delete(p.codes, r.PostFormValue("code")) // a code works once
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if !ok || b64(sum[:]) != g.challenge {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		nonce := g.nonce
		if p.badNonce {
			nonce = "someone-elses"
		}
		now := time.Now()
		idt := p.sign(map[string]any{"iss": p.url, "sub": g.user.sub, "aud": idpClientID, "iat": now.Unix(),
			"exp": now.Add(5 * time.Minute).Unix(), "nonce": nonce, "preferred_username": g.user.name, "groups": g.user.groups})
		writeJSON(w, 200, map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": idt})
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	p.url = hs.URL
	return p
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// sign makes a compact RS256 JWT of claims with the signer key.
func (p *fakeIdP) sign(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	in := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.signer, crypto.SHA256, sum[:])
	if err != nil {
		p.t.Fatal(err)
	}
	return in + "." + b64(sig)
}

func (p *fakeIdP) grant(u idpUser) {
	p.mu.Lock()
	p.user = u
	p.mu.Unlock()
}

// ssoEnv is a server with single sign-on at p, on a socket whose address is known before
// the server is made (the redirect URL names it).
func ssoEnv(t *testing.T, p *fakeIdP, roleMap string) (*Server, *sqlstore.Store, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	rules, err := ParseOIDCRoleMap(roleMap)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t, "sqlite")
	srv, err := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler),
		Scheduler: sundial.Config{Engine: engine.Config{PollInterval: 50 * time.Millisecond}},
		OIDC: &OIDCConfig{Issuer: p.url, ClientID: idpClientID, ClientSecret: idpClientSecret,
			RedirectURL: base + "/api/v1/auth/sso/callback", RoleMap: rules}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	if _, _, err := EnsureAdmin(context.Background(), st, "admin"); err != nil {
		t.Fatal(err)
	}
	return srv, st, base
}

// browser signs in through the provider as a browser would, following redirects with a
// cookie jar, and stops at the answer that leaves the sign-in (the redirect to the console
// page, or an error).
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if !strings.HasPrefix(req.URL.Path, "/api/") && req.URL.Path != "/authorize" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

func signIn(t *testing.T, c *http.Client, base string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(base + "/api/v1/auth/sso/login?next=/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func me(t *testing.T, c *http.Client, base string) map[string]any {
	t.Helper()
	resp, err := c.Get(base + "/api/v1/auth/me")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if resp.StatusCode != 200 {
		t.Fatalf("me: %d", resp.StatusCode)
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out
}

func auditActions(t *testing.T, st store.Store) []string {
	t.Helper()
	es, err := st.AuditList(context.Background(), store.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Action+" "+e.Actor)
	}
	return out
}

// TestSSOLogin: a sign-in through the provider makes the user with the role and scope its
// groups map to, opens a session and returns to the page asked for; a later sign-in with
// other groups changes the role; both are in the audit log.
func TestSSOLogin(t *testing.T) {
	p := newFakeIdP(t)
	_, st, base := ssoEnv(t, p, "ops=operator:app1,app2;admins=admin;staff=viewer")
	p.grant(idpUser{sub: "u-1", name: "alice", groups: []string{"staff", "ops"}})
	c := browser(t)
	resp, body := signIn(t, c, base)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs" {
		t.Fatalf("sign-in ended with %d %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	m := me(t, c, base)
	if m["name"] != "alice" || m["role"] != "operator" || strings.Join(toStrings(m["scope"]), ",") != "app1,app2" {
		t.Fatalf("signed in as %v", m)
	}
	u, err := st.UserGetByName(context.Background(), "alice")
	if err != nil || u.SSOSubject != p.url+"|u-1" || u.PasswordHash != "" {
		t.Fatalf("stored user %+v, %v", u, err)
	}

	p.grant(idpUser{sub: "u-1", name: "alice", groups: []string{"admins"}})
	c2 := browser(t)
	if resp, body := signIn(t, c2, base); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d %s", resp.StatusCode, body)
	}
	if m := me(t, c2, base); m["role"] != "admin" {
		t.Fatalf("after the groups changed: %v", m)
	}
	got := strings.Join(auditActions(t, st), "; ")
	for _, want := range []string{"user.sso_sync alice", "auth.sso_login alice"} {
		if strings.Count(got, want) != 2 {
			t.Fatalf("audit log %q: want %q twice", got, want)
		}
	}
	// The user has no password: a password login fails like a wrong one.
	lr, err := http.Post(base+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"alice","password":""}`))
	if err != nil {
		t.Fatal(err)
	}
	lr.Body.Close()
	if lr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("password login of an SSO user: %d", lr.StatusCode)
	}
}

// TestSSORefused: no mapped group, a forged ID token, another sign-in's nonce, a name taken
// by a local user and a state that is not the browser's are all refused without a session;
// the refusals are audited.
func TestSSORefused(t *testing.T) {
	p := newFakeIdP(t)
	_, st, base := ssoEnv(t, p, "ops=operator:app1")
	for _, tc := range []struct {
		name   string
		user   idpUser
		forge  bool
		nonce  bool
		status int
		want   string
	}{
		{"no mapped group", idpUser{sub: "u-2", name: "bob", groups: []string{"sales"}}, false, false, 403, "is mapped to a role"},
		{"forged token", idpUser{sub: "u-3", name: "carol", groups: []string{"ops"}}, true, false, 403, "does not verify"},
		{"other nonce", idpUser{sub: "u-4", name: "dave", groups: []string{"ops"}}, false, true, 403, "nonce"},
		{"local name", idpUser{sub: "u-5", name: "admin", groups: []string{"ops"}}, false, false, 403, "belongs to another account"},
		// The one name rule (sundial.CheckName) holds for names made by a sign-in too.
		{"blank name", idpUser{sub: "u-6", name: "   ", groups: []string{"ops"}}, false, false, 403, "must not be blank"},
		{"bidi name", idpUser{sub: "u-7", name: "ev\u202eil", groups: []string{"ops"}}, false, false, 403, "invisible format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.grant(tc.user)
			p.mu.Lock()
			p.signer, p.badNonce = p.key, tc.nonce
			if tc.forge {
				p.signer, _ = rsa.GenerateKey(rand.Reader, 2048)
			}
			p.mu.Unlock()
			c := browser(t)
			resp, body := signIn(t, c, base)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d body %s; want %d with %q", resp.StatusCode, body, tc.status, tc.want)
			}
			r, err := c.Get(base + "/api/v1/auth/me")
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a refused sign-in left a session: me = %d", r.StatusCode)
			}
		})
	}
	for _, name := range []string{"bob", "   ", "ev\u202eil"} {
		if _, err := st.UserGetByName(context.Background(), name); err == nil {
			t.Fatalf("a refused sign-in made user %q", name)
		}
	}
	if got := strings.Join(auditActions(t, st), "; "); strings.Count(got, "auth.login_failed") < 4 {
		t.Fatalf("audit log %q: want the 4 refusals", got)
	}
	// A callback whose state is not this browser's (a forged link) is refused.
	resp, err := browser(t).Get(base + "/api/v1/auth/sso/callback?code=x&state=y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback with a foreign state: %d", resp.StatusCode)
	}
}

// TestSSOConsoleButton: the console's login page is told of single sign-on only when it is on
// (the page itself is tested in package web: TestLoginPageSSO).
func TestSSOConsoleButton(t *testing.T) {
	p := newFakeIdP(t)
	srv, _, _ := ssoEnv(t, p, "ops=viewer")
	if got := srv.SSOLogin(); got != "/api/v1/auth/sso/login" {
		t.Fatalf("SSOLogin with SSO: %q", got)
	}
	e := newEnv(t, "sqlite")
	if got := e.srv.SSOLogin(); got != "" {
		t.Fatalf("SSOLogin without SSO: %q", got)
	}
	if r := e.raw("GET", "/api/v1/auth/sso/login", "", nil, nil); r.StatusCode != http.StatusNotFound {
		t.Fatalf("SSO start without SSO: %d", r.StatusCode)
	}
}

func toStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			s, _ := x.(string)
			out = append(out, s)
		}
	}
	return out
}

func TestParseOIDCRoleMap(t *testing.T) {
	rules, err := ParseOIDCRoleMap("ops=operator:app1,app2; admins=admin ;staff=viewer")
	if err != nil || len(rules) != 3 || rules[0].Group != "ops" || strings.Join(rules[0].Apps, ",") != "app1,app2" || rules[1].Role != store.RoleAdmin {
		t.Fatalf("rules %+v, %v", rules, err)
	}
	for _, bad := range []string{"", "ops", "ops=root", "admins=admin:app1", "=viewer"} {
		if _, err := ParseOIDCRoleMap(bad); err == nil {
			t.Errorf("ParseOIDCRoleMap(%q) took it", bad)
		}
	}
	for _, tc := range []struct {
		groups []string
		role   store.Role
		scope  string
	}{
		{[]string{"staff", "ops"}, store.RoleOperator, "app1,app2"},
		{[]string{"ops", "admins"}, store.RoleAdmin, store.ScopeAll},
		{[]string{"staff"}, store.RoleViewer, store.ScopeAll},
	} {
		role, scope, ok := grant(rules, tc.groups)
		if !ok || role != tc.role || scope != tc.scope {
			t.Errorf("grant(%v) = %s %q %v, want %s %q", tc.groups, role, scope, ok, tc.role, tc.scope)
		}
	}
	if _, _, ok := grant(rules, []string{"sales"}); ok {
		t.Error("an unmapped group was granted a role")
	}
}
