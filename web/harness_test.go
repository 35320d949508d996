package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/web"
)

const (
	adminName = "admin"
	adminPass = "correct horse battery"
)

// harness is a real server (API and console) on a fresh database behind a real socket, with
// an admin whose password the tests know, and a "talker" handler that writes output lines
// and runs until the test releases it.
type harness struct {
	t   *testing.T
	url string
	srv *server.Server
	st  store.Store
	// release ends the running talker executions.
	release chan struct{}
	// talking receives each talker execution's id once it has written its first lines.
	talking chan int64
	// ran receives each run of the "shell" and "echo" handlers with the params it was given.
	ran chan handlerRun
}

// handlerRun is one run of a handler that tells its params.
type handlerRun struct {
	execution int64
	params    string
}

func newHarness(t *testing.T, dialect string) *harness {
	t.Helper()
	return newHarnessWith(t, dialect, nil)
}

// newHarnessWith is newHarness with the server's Config adjusted by tune.
func newHarnessWith(t *testing.T, dialect string, tune func(*server.Config)) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, testdb.DSN(t, dialect))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Errors are logged to the test, where a failure shows them.
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := server.Config{Store: st, Logger: logger,
		Scheduler: sundial.Config{Engine: engine.Config{PollInterval: 50 * time.Millisecond}}}
	if tune != nil {
		tune(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Mount(srv, web.Config{Logger: logger}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, st: st, release: make(chan struct{}), talking: make(chan int64, 16), ran: make(chan handlerRun, 16)}
	// In-process stand-ins for an executor's shell handler and an ordinary one: each writes the
	// params it was given to its output and tells the test.
	for _, name := range []string{"shell", "echo"} {
		srv.Register(name, func(ctx context.Context) error {
			run := sundial.ExecutionFrom(ctx)
			sundial.Logger(ctx).Info("given " + run.Params)
			h.ran <- handlerRun{run.ID, run.Params}
			return nil
		})
	}
	srv.Register("talker", func(ctx context.Context) error {
		run := sundial.ExecutionFrom(ctx)
		log := sundial.Logger(ctx)
		log.Info("talker started", "params", run.Params)
		log.Info("working on it")
		h.talking <- run.ID
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		log.Info("talker done")
		return nil
	})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	h.url = hs.URL
	// The cheapest bcrypt cost: the race detector makes the default take seconds.
	hash, err := bcrypt.GenerateFromPassword([]byte(adminPass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.UserInsert(ctx, &store.User{Name: adminName, PasswordHash: string(hash), Role: store.RoleAdmin}); err != nil {
		t.Fatal(err)
	}
	return h
}

// client is a browser without JavaScript: a cookie jar and no redirects followed
// automatically unless asked.
type client struct {
	h  *harness
	hc *http.Client
}

func (h *harness) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{h: h, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(method, path string, form url.Values, header map[string]string) page {
	c.h.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.h.url+path, body)
	if err != nil {
		c.h.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.h.t.Fatal(err)
	}
	return page{resp.StatusCode, resp.Header, string(b)}
}

func (c *client) get(path string) page { return c.do("GET", path, nil, nil) }

// post submits a form with the page's CSRF token.
func (c *client) post(path, csrf string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrf)
	return c.do("POST", path, form, nil)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf reads the CSRF token of a page's form.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the page (status %d):\n%s", p.status, p.body)
	}
	return m[1]
}

// login signs in through the login form and returns a page's CSRF token.
func (c *client) login() string {
	c.h.t.Helper()
	return c.loginAs(adminName, adminPass)
}

// loginAs signs in as the named user.
func (c *client) loginAs(name, password string) string {
	c.h.t.Helper()
	lp := c.get("/login")
	p := c.post("/login", csrfOf(c.h.t, lp), url.Values{"username": {name}, "password": {password}, "next": {"/"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/" {
		c.h.t.Fatalf("login: status %d location %q:\n%s", p.status, p.header.Get("Location"), p.body)
	}
	return csrfOf(c.h.t, c.get("/account"))
}

func (p page) mustStatus(t *testing.T, want int) page {
	t.Helper()
	if p.status != want {
		t.Fatalf("status %d, want %d:\n%s", p.status, want, p.body)
	}
	return p
}

func (p page) mustContain(t *testing.T, subs ...string) page {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(p.body, s) {
			t.Fatalf("page lacks %q:\n%s", s, p.body)
		}
	}
	return p
}

// createCronJob makes a job through the API's store path the console uses (the form).
func (c *client) createJob(csrf string, form url.Values) page {
	c.h.t.Helper()
	base := url.Values{"group": {"default"}, "handler": {"noop"}, "concurrency": {"allow"},
		"triggers[0].kind": {"cron"}, "triggers[0].time_zone": {"UTC"}}
	for k, v := range form {
		base[k] = v
	}
	return c.post("/jobs/new", csrf, base)
}

func jobIDFrom(t *testing.T, p page) int64 {
	t.Helper()
	var id int64
	if _, err := fmt.Sscanf(p.header.Get("Location"), "/jobs/%d", &id); err != nil {
		t.Fatalf("no job location in %d %q:\n%s", p.status, p.header.Get("Location"), p.body)
	}
	return id
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
