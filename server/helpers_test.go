package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/leaktest"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// env is a running server on a fresh database, behind a real socket, with an admin token.
type env struct {
	t     *testing.T
	srv   *Server
	st    *sqlstore.Store
	url   string
	token string
	pw    string
}

// forEachDialect runs fn on SQLite, PostgreSQL and MariaDB, in parallel.
func forEachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, d := range testdb.Dialects {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

func newEnv(t *testing.T, dialect string) *env {
	t.Helper()
	return newEnvWith(t, dialect, nil)
}

// newEnvWith is newEnv with the server's Config adjusted by tune.
func newEnvWith(t *testing.T, dialect string, tune func(*Config)) *env {
	t.Helper()
	return newEnvOn(t, openStore(t, dialect), tune, nil)
}

// openStore opens a fresh, migrated database of the dialect, closed when t ends.
func openStore(t *testing.T, dialect string) *sqlstore.Store {
	t.Helper()
	return openDSN(t, testdb.DSN(t, dialect))
}

// openDSN opens and migrates the database at dsn (again, for a restarted node), closed when
// t ends.
func openDSN(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// newEnvOn runs a server on st (which other servers may share: a cluster) with its Config
// adjusted by tune and setup run on it before it starts (to register handlers). The admin
// is created on st's first server; later ones log in with ensureAdmin's password from it.
func newEnvOn(t *testing.T, st *sqlstore.Store, tune func(*Config), setup func(*Server)) *env {
	t.Helper()
	ctx := context.Background()
	// A fire with no executor online fails after half a second, not the default minute.
	cfg := Config{Store: st, Logger: slog.New(slog.DiscardHandler), ExecutorWait: 500 * time.Millisecond,
		Scheduler: sundial.Config{Engine: engine.Config{PollInterval: 50 * time.Millisecond}}}
	if tune != nil {
		tune(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close) // runs before Stop: HTTP first, then the engine
	e := &env{t: t, srv: srv, st: st, url: hs.URL}
	pw, created, err := EnsureAdmin(ctx, st, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		return e // a second node of a cluster: the caller shares the first node's token
	}
	if pw == "" {
		t.Fatal("EnsureAdmin created an admin without a password")
	}
	e.pw = pw
	e.token = e.login()
	return e
}

// startEnv starts a server on prev's database with prev's password and token, as a restarted
// node would find them.
func startEnv(t *testing.T, st *sqlstore.Store, tune func(*Config), prev *env) *env {
	t.Helper()
	e := newEnvOn(t, st, tune, nil)
	e.pw, e.token = prev.pw, prev.token
	return e
}

// client returns a typed API client holding the admin token.
func (e *env) client() *api.Client {
	e.t.Helper()
	c, err := api.NewClient(e.url, e.token, api.WithRequestTimeout(30*time.Second))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// must takes a client call's result and error and returns a function that fails t on the
// error and otherwise returns the result: must(c.GetJob(ctx, id))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// login logs in with the admin password and creates an API token through the cookie session.
func (e *env) login() string {
	e.t.Helper()
	resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": e.pw})
	if resp.StatusCode != 200 {
		e.t.Fatalf("login: %d", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly {
		e.t.Fatalf("login set no HttpOnly session cookie: %v", resp.Cookies())
	}
	var tok api.Token
	resp = e.raw("POST", "/api/v1/tokens", "", cookie, map[string]string{"name": "test"})
	if resp.StatusCode != 201 {
		e.t.Fatalf("create token: %d", resp.StatusCode)
	}
	mustDecode(e.t, resp, &tok)
	if !strings.HasPrefix(tok.Token, tokenPrefix) {
		e.t.Fatalf("token %q lacks the %s prefix", tok.Token, tokenPrefix)
	}
	return tok.Token
}

// raw sends a request with an optional bearer token or cookie and returns the response
// (its body is closed at the end of the test).
func (e *env) raw(method, path, token string, cookie *http.Cookie, body any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// call sends an authenticated request, checks the status and decodes the body into out.
func (e *env) call(method, path string, body any, wantStatus int, out any) {
	e.t.Helper()
	resp := e.raw(method, path, e.token, nil, body)
	if resp.StatusCode != wantStatus {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, wantStatus, b)
	}
	if out != nil {
		mustDecode(e.t, resp, out)
	}
}

// callErr sends an authenticated request that must fail with status and returns the error.
func (e *env) callErr(method, path string, body any, status int) apiError {
	e.t.Helper()
	var eb api.ErrorBody
	e.call(method, path, body, status, &eb)
	if eb.Error.Code == "" || eb.Error.Message == "" {
		e.t.Fatalf("%s %s: error body without code or message: %+v", method, path, eb)
	}
	return eb.Error
}

func mustDecode(t *testing.T, resp *http.Response, out any) {
	t.Helper()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("decode %s response: %v", resp.Request.URL.Path, err)
	}
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMain fails the package's tests if any goroutine they started is still running at the
// end: a Stop or Close that returns before its goroutines end is a bug (the exceptions that
// are not ours, such as toxiproxy's in TestReadyzDatabaseCut, are leaktest.Known).
func TestMain(m *testing.M) {
	if url := os.Getenv(sdkMapChildEnv); url != "" {
		runSDKMapChild(url)
		return
	}
	bcryptCost = bcrypt.MinCost
	leaktest.VerifyTestMain(m)
}
