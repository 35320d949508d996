package server

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
)

// TestBadInputIs400 sends what reached a 500 (PostgreSQL, MariaDB) or was stored unchecked
// (SQLite): every database must answer 400 with the same field and message.
func TestBadInputIs400(t *testing.T) {
	type answer struct{ field, message string }
	cases := []struct {
		name, method, path string
		body               any
		noAuth             bool
		field              string
	}{
		{"nul in job name", "POST", "/api/v1/jobs", map[string]any{"name": "a\x00b", "handler": "noop"}, false, "name"},
		{"escape in job name", "POST", "/api/v1/jobs", map[string]any{"name": "a\x1b[31mred", "handler": "noop"}, false, "name"},
		{"long job name", "POST", "/api/v1/jobs", map[string]any{"name": strings.Repeat("n", maxNameLen+1), "handler": "noop"}, false, "name"},
		{"nul in description", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop", "description": "x\x00"}, false, "description"},
		{"long params", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop", "params": strings.Repeat("p", maxTextLen+1)}, false, "params"},
		{"max_retries overflow", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop", "max_retries": int64(2147483648)}, false, "max_retries"},
		{"priority overflow", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop",
			"triggers": []map[string]any{{"cron": "0 0 * * * ?", "priority": int64(-2147483649)}}}, false, "triggers[0].priority"},
		{"nul in trigger name", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop",
			"triggers": []map[string]any{{"name": "t\x00", "cron": "0 0 * * * ?"}}}, false, "triggers[0].name"},
		{"long cron", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop",
			"triggers": []map[string]any{{"cron": "0 0 * * * ? " + strings.Repeat("2030,", 300) + "2031"}}}, false, "triggers[0].cron"},
		{"every_ms under the minimum", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop",
			"triggers": []map[string]any{{"every_ms": 1}}}, false, "triggers[0].every_ms"},
		{"cron under the minimum", "POST", "/api/v1/jobs", map[string]any{"name": "j", "handler": "noop",
			"triggers": []map[string]any{{"cron": "* * * * * ?"}}}, false, "triggers[0].cron"},
		{"nul in calendar name", "PUT", "/api/v1/calendars/a%00b", map[string]any{"spec": "weekly:1"}, false, "path"},
		{"long calendar name", "PUT", "/api/v1/calendars/" + strings.Repeat("c", maxNameLen+1), map[string]any{"spec": "weekly:1"}, false, "path"},
		{"long app title", "PUT", "/api/v1/apps/a", map[string]any{"title": strings.Repeat("t", maxNameLen+1)}, false, "title"},
		{"nul in a filter", "GET", "/api/v1/jobs?group=a%00", nil, false, "group"},
		{"nul in login name, no credentials", "POST", "/api/v1/auth/login", map[string]any{"username": "ad\x00min", "password": "x"}, true, "username"},
		{"nul in token name", "POST", "/api/v1/tokens", map[string]any{"name": "t\x00"}, false, "name"},
	}
	var (
		resultsMu sync.Mutex
		got       []map[string]answer
		dialects  []string
	)
	// The dialects run in parallel after this function returns; the cleanup compares them.
	t.Cleanup(func() {
		for i := 1; i < len(got); i++ {
			for name, a := range got[0] {
				if got[i][name] != a {
					t.Errorf("%s: %s answers %+v, %s %+v", name, dialects[0], a, dialects[i], got[i][name])
				}
			}
		}
	})
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, dialect, func(c *Config) { c.Scheduler.MinInterval = 2 * time.Second })
		answers := map[string]answer{}
		for _, c := range cases {
			token := e.token
			if c.noAuth {
				token = ""
			}
			resp := e.raw(c.method, c.path, token, nil, c.body)
			var eb api.ErrorBody
			if resp.StatusCode != http.StatusBadRequest {
				b, _ := io.ReadAll(resp.Body)
				t.Errorf("%s: status %d, want 400: %s", c.name, resp.StatusCode, b)
				continue
			}
			mustDecode(t, resp, &eb)
			if eb.Error.Field != c.field || eb.Error.Code != "invalid_argument" {
				t.Errorf("%s: field %q code %q, want %q invalid_argument (%s)", c.name, eb.Error.Field, eb.Error.Code, c.field, eb.Error.Message)
			}
			answers[c.name] = answer{eb.Error.Field, eb.Error.Message}
		}
		var jobs api.Page[api.Job]
		e.call("GET", "/api/v1/jobs", nil, 200, &jobs)
		if len(jobs.Items) != 0 {
			t.Errorf("refused requests stored %d jobs", len(jobs.Items))
		}
		resultsMu.Lock()
		got, dialects = append(got, answers), append(dialects, dialect)
		resultsMu.Unlock()
	})
}

// TestFailedLoginTimeDoesNotTellUsers compares an unknown user's failed login with a known
// user's wrong password: the medians must be alike (a stand-in hash of minimum cost
// answered unknown users 20 times faster).
func TestFailedLoginTimeDoesNotTellUsers(t *testing.T) {
	const cost = 9 // far above the tests' MinCost, so the difference would show
	e := newEnvWith(t, "sqlite", func(c *Config) {
		c.Login = LoginLimits{PasswordCost: cost, UserFailures: 1000, AddressFailures: 1000}
	})
	hash, err := bcrypt.GenerateFromPassword([]byte("a-long-password-here"), cost)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.st.UserGetByName(t.Context(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.UserSetPassword(t.Context(), u.ID, string(hash)); err != nil {
		t.Fatal(err)
	}
	// The two are measured in turns, so that load on the machine falls on both alike.
	var known, unknown []time.Duration
	for range 9 {
		for _, user := range []string{"admin", "nobody"} {
			start := time.Now()
			resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": user, "password": "wrong-password"})
			d := time.Since(start)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("login as %s: %d, want 401", user, resp.StatusCode)
			}
			if user == "admin" {
				known = append(known, d)
			} else {
				unknown = append(unknown, d)
			}
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	k, un := median(known), median(unknown)
	// Before the fix the ratio was about 1/64 at this cost; noise on a loaded machine
	// stays well within 3.
	if ratio := float64(un) / float64(k); ratio < 1.0/3 || ratio > 3 {
		t.Fatalf("failed login medians: known user %v, unknown user %v (ratio %.2f, want 1/3 to 3)", k, un, ratio)
	}
}

// TestLoginBacksOff: past the free failures a name is answered 429 with Retry-After, even
// with the right password, while other names from the same address still get through.
func TestLoginBacksOff(t *testing.T) {
	e := newEnvWith(t, "sqlite", func(c *Config) {
		c.Login = LoginLimits{UserFailures: 3, AddressFailures: 100, Backoff: time.Hour, MaxBackoff: 2 * time.Hour}
	})
	try := func(user, pw string) *http.Response {
		return e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": user, "password": pw})
	}
	for i := range 4 {
		if resp := try("admin", "wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	resp := try("admin", e.pw)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "3600" {
		t.Fatalf("right password after 4 failures: %d Retry-After %q, want 429 and 3600", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := try("other", "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another name from the same address: %d, want 401", resp.StatusCode)
	}
	if n := testutil.ToFloat64(e.srv.logins.limited.WithLabelValues("user")); n != 1 {
		t.Fatalf("sundial_login_limited_total{by=user} = %v, want 1", n)
	}
}

// TestAddressBacksOff: one address trying many names backs off too.
func TestAddressBacksOff(t *testing.T) {
	e := newEnvWith(t, "sqlite", func(c *Config) {
		c.Login = LoginLimits{UserFailures: 100, AddressFailures: 2, Backoff: time.Hour}
	})
	for i, user := range []string{"a", "b", "c"} {
		if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": user, "password": "x"}); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	if resp := e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "d", "password": "x"}); resp.StatusCode != 429 {
		t.Fatalf("fourth name from one address: %d, want 429", resp.StatusCode)
	}
}

// TestSecurityHeaders: every answer says nosniff and carries the policy; secrets are not
// cached.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, "sqlite")
	resp := e.raw("GET", "/healthz", "", nil, nil)
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("healthz headers: %v", resp.Header)
	}
	if resp.Header.Get("Strict-Transport-Security") != "" {
		t.Fatal("HSTS over plain HTTP")
	}
	resp = e.raw("POST", "/api/v1/tokens", e.token, nil, map[string]string{"name": "n"})
	if resp.StatusCode != 201 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token creation: %d Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	resp = e.raw("POST", "/api/v1/auth/login", "", nil, map[string]string{"username": "admin", "password": e.pw})
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("login: %d Cache-Control %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}

// TestTrustedProxyTLS: behind a trusted TLS-terminating proxy the session cookie is Secure
// and HSTS is sent; the same header from an untrusted peer changes nothing.
func TestTrustedProxyTLS(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		e := newEnvWith(t, "sqlite", func(c *Config) {
			if trusted {
				c.TrustedProxies, _ = httpserve.ParseProxies("127.0.0.0/8, ::1")
			}
		})
		body := strings.NewReader(`{"username":"admin","password":"` + e.pw + `"}`)
		req, _ := http.NewRequest("POST", e.url+"/api/v1/auth/login", body)
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		secure := len(resp.Cookies()) == 1 && resp.Cookies()[0].Secure
		hsts := resp.Header.Get("Strict-Transport-Security") != ""
		if resp.StatusCode != 200 || secure != trusted || hsts != trusted {
			t.Fatalf("trusted %v: status %d, Secure cookie %v, HSTS %v", trusted, resp.StatusCode, secure, hsts)
		}
	}
}

// TestAppJobQuota: an app holds at most MaxJobsPerApp jobs, counted on create and when a
// job moves to the app.
func TestAppJobQuota(t *testing.T) {
	e := newEnvWith(t, "sqlite", func(c *Config) { c.Input.MaxJobsPerApp = 2 })
	for _, name := range []string{"a", "b"} {
		e.call("POST", "/api/v1/jobs", map[string]any{"name": name, "handler": "h", "app": "billing"}, 201, nil)
	}
	if err := e.callErr("POST", "/api/v1/jobs", map[string]any{"name": "c", "handler": "h", "app": "billing"}, 409); err.Field != "app" || err.Code != "resource_exhausted" {
		t.Fatalf("third job of the app: %+v", err)
	}
	var local api.Job
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "d", "handler": "noop"}, 201, &local)
	e.callErr("PUT", "/api/v1/jobs/"+itoa(local.ID), map[string]any{"name": "d", "handler": "h", "app": "billing"}, 409)
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "e", "handler": "h", "app": "other"}, 201, nil)
}
