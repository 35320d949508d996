package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/server"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Console.
type Config struct {
	// Server is the node the console runs in: every page reads and changes through its
	// service layer (server.Ops), as the signed-in person.
	Server *server.Server
	// Logger receives the console's logs. Default: slog.Default().
	Logger *slog.Logger
	// Clock is the time source of "now" on the pages. Default: the system clock.
	Clock clock.Clock
}

// Console serves the console's pages and assets.
type Console struct {
	cfg   Config
	srv   *server.Server
	log   *slog.Logger
	clock clock.Clock
	mux   *http.ServeMux
	pages map[string]*template.Template
	// sso is the single sign-on start the login page offers, empty without SSO.
	sso string
}

// Mount serves a new console on srv at every path its API does not take.
func Mount(srv *server.Server, cfg Config) error {
	cfg.Server = srv
	c, err := New(cfg)
	if err != nil {
		return err
	}
	srv.MountConsole(c)
	return nil
}

// New returns the console; serve it at the server's root (Mount).
func New(cfg Config) (*Console, error) {
	if cfg.Server == nil {
		return nil, errors.New("web: Config.Server is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	c := &Console{cfg: cfg, srv: cfg.Server, log: cfg.Logger, clock: cfg.Clock,
		mux: http.NewServeMux(), sso: cfg.Server.SSOLogin()}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	c.routes()
	return c, nil
}

// ops is the service layer the pages read and change through.
func (c *Console) ops() *server.Ops { return c.srv.Ops() }

// handlerFunc is a page's handler; an error it returns is shown as an error page.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (c *Console) routes() {
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", cacheForever(http.FileServerFS(static))))
	// Browsers ask for /favicon.ico where a page names no icon (a JSON or text answer).
	c.mux.Handle("GET /favicon.ico", http.RedirectHandler(asset("console/icon.svg"), http.StatusFound))
	c.mux.Handle("GET /login", c.public(c.loginPage))
	c.mux.Handle("POST /login", c.public(c.loginSubmit))

	page := func(pattern string, h handlerFunc) { c.mux.Handle(pattern, c.signedIn(h, false)) }
	admin := func(pattern string, h handlerFunc) { c.mux.Handle(pattern, c.signedIn(h, true)) }
	page("POST /logout", c.logout)
	page("GET /account", c.accountPage)
	page("POST /account/password", c.changePassword)

	page("GET /{$}", c.dashboard)
	page("GET /jobs", c.jobsPage)
	page("POST /jobs/bulk", c.jobsBulk)
	page("GET /jobs/new", c.jobNew)
	page("POST /jobs/new", c.jobCreate)
	page("GET /jobs/{id}", c.jobDetail)
	page("GET /jobs/{id}/fires", c.jobFires)
	page("GET /jobs/{id}/edit", c.jobEdit)
	page("POST /jobs/{id}/edit", c.jobUpdate)
	page("GET /jobs/{id}/copy", c.jobCopy)
	page("POST /jobs/{id}/run", c.jobRun)
	page("POST /jobs/{id}/pause", c.jobPause)
	page("POST /jobs/{id}/resume", c.jobResume)
	page("POST /jobs/{id}/delete", c.jobDelete)
	page("POST /jobs/{id}/triggers", c.triggerAdd)
	page("GET /jobs/{id}/script/versions/{version}", c.scriptVersion)
	page("POST /jobs/{id}/script/versions/{version}/restore", c.scriptRestore)
	page("POST /triggers/{id}/policy", c.triggerPolicy)
	page("POST /triggers/{id}/{action}", c.triggerAction)
	page("POST /jobs/{id}/backfills", c.backfillCreate)
	page("POST /backfills/{id}/cancel", c.backfillCancel)
	page("GET /preview", c.preview)

	page("GET /executions", c.executionsPage)
	page("GET /executions/{id}", c.executionDetail)
	page("POST /executions/{id}/kill", c.executionKill)
	page("POST /executions/{id}/retry", c.executionRetry)

	page("GET /workflows", c.workflowsPage)
	page("GET /workflows/new", c.workflowNew)
	page("POST /workflows/new", c.workflowCreate)
	page("POST /workflows/preview", c.workflowPreview)
	page("GET /workflow-jobs", c.workflowJobs)
	page("GET /workflows/{name}/edit", c.workflowEdit)
	page("POST /workflows/{name}/edit", c.workflowUpdate)
	page("GET /workflows/{name}", c.workflowDetail)
	page("POST /workflows/{name}/run", c.workflowRun)
	page("POST /workflows/{name}/backfills", c.workflowBackfill)
	page("GET /workflow-runs/{id}", c.workflowRunPage)
	page("POST /workflow-runs/{id}/cancel", c.workflowRunCancel)
	page("POST /workflow-runs/{id}/retry", c.workflowRunRetry)
	page("POST /workflow-runs/{id}/nodes/{node}/retry", c.workflowNodeRetry)
	page("POST /workflow-runs/{id}/nodes/{node}/mark-succeeded", c.workflowNodeMark)

	page("GET /apps", c.appsPage)
	// The apps' changes are refused to all but admins by their operations, not by the route.
	page("POST /apps", c.appCreate)
	page("GET /apps/{name}", c.appPage)
	page("POST /apps/{name}", c.appUpdate)
	page("POST /apps/{name}/delete", c.appDelete)
	page("POST /apps/{name}/credential/{action}", c.appCredential)
	page("GET /nodes", c.nodesPage)
	page("GET /calendars", c.calendarsPage)
	page("POST /calendars", c.calendarSave)
	page("POST /calendars/delete", c.calendarDelete)
	c.mux.Handle("GET /reset", c.public(c.resetPage))
	c.mux.Handle("POST /reset", c.public(c.resetSubmit))
	admin("GET /users", c.usersPage)
	admin("POST /users", c.userCreate)
	admin("GET /users/{id}", c.userPage)
	admin("POST /users/{id}", c.userUpdate)
	admin("POST /users/{id}/reset-password", c.userReset)
	admin("GET /tokens", c.tokensPage)
	admin("POST /tokens", c.tokenCreate)
	admin("POST /tokens/{id}/delete", c.tokenDelete)
	page("/", func(w http.ResponseWriter, r *http.Request) error {
		return errNotFound("no page " + r.URL.Path)
	})
}

// ServeHTTP serves a console request. The security headers (the Content-Security-Policy
// allowing only the console's own scripts, styles and connections) are the server's, set
// on every answer (internal/httpserve.Headers).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

// cacheForever marks the embedded assets cacheable: their URLs carry their version.
func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		h.ServeHTTP(w, r)
	})
}

// view is what every page template gets.
type view struct {
	Title string
	// Nav names the menu entry to mark current.
	Nav  string
	User *user
	CSRF string
	// Flash is a one-line notice at the top (an action's outcome).
	Flash string
	Data  any
}

// parsePages parses each page template together with the layout and the shared partials.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", n, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes a page in the layout, or, for an htmx request naming a fragment, only that
// fragment (the block the request swaps).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v *view) error {
	v.User, v.CSRF = userFrom(r.Context()), csrfFrom(r.Context())
	return c.execute(w, status, page, "layout", v)
}

// renderFragment writes one named template of a page (an htmx swap).
func (c *Console) renderFragment(w http.ResponseWriter, r *http.Request, page, name string, data any) error {
	return c.execute(w, http.StatusOK, page, name, data)
}

func (c *Console) execute(w http.ResponseWriter, status int, page, name string, data any) error {
	t, ok := c.pages[page]
	if !ok {
		return fmt.Errorf("web: no page template %q", page)
	}
	// Rendered to a buffer first, so a template error becomes an error page instead of half
	// a page.
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("web: render %s/%s: %w", page, name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := buf.WriteTo(w)
	return err
}

func errNotFound(msg string) error {
	return &api.Error{Status: http.StatusNotFound, Code: "not_found", Message: msg}
}

func errBadRequest(msg string) error {
	return &api.Error{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Message: msg}
}

func errForbidden(msg string) error {
	return &api.Error{Status: http.StatusForbidden, Code: "permission_denied", Message: msg}
}

// fail shows err as an error page (an htmx request gets the message to show in place), with
// the status and text the API gives the same error (server.ErrorOf).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the browser went away
	}
	ae, known := server.ErrorOf(err)
	if !known {
		c.log.Error("console page failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	status, msg := ae.Status, ae.Message
	if ae.Field != "" && ae.Code == api.CodeInvalidArgument {
		msg = ae.Field + ": " + msg
	}
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg))
		return
	}
	v := &view{Title: http.StatusText(status), Data: map[string]any{"Status": status, "Message": msg}}
	if err := c.render(w, r, status, "error", v); err != nil {
		c.log.Error("render error page", "err", err)
		http.Error(w, msg, status)
	}
}

// fmtMillis shows a Unix-millisecond instant in UTC; the page script shows it in the
// reader's zone.
func fmtMillis(ms int64) template.HTML {
	if ms == 0 {
		return "–"
	}
	t := time.UnixMilli(ms).UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s</time>`, t.Format(time.RFC3339Nano), t.Format("2006-01-02 15:04:05 UTC")))
}

func fmtMillisShort(ms int64) template.HTML { return fmtMillisIn(ms, "") }

// fmtMillisIn is a short time that app.js may show in zone (a job's trigger's), when the
// reader chose to see times in each job's zone. Every time is labelled with its zone: the
// server writes UTC, app.js rewrites it in the chosen zone.
func fmtMillisIn(ms int64, zone string) template.HTML {
	if ms == 0 {
		return "–"
	}
	t := time.UnixMilli(ms).UTC()
	attr := ""
	if zone != "" {
		attr = fmt.Sprintf(` data-zone="%s"`, template.HTMLEscapeString(zone))
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" data-short%s>%s</time>`, t.Format(time.RFC3339Nano), attr, t.Format("01-02 15:04:05 UTC")))
}

// fmtDuration shows milliseconds the way a person reads them: 850 ms, 12.3 s, 4m05s, 3h10m.
func fmtDuration(ms int64) string {
	switch d := time.Duration(ms) * time.Millisecond; {
	case ms < 0:
		return "–"
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// stateClass is the CSS class that colours a state.
func stateClass(state string) string {
	switch state {
	case "succeeded", "waiting", "online", "active":
		return "ok"
	case "failed", "timed_out", "lost", "error":
		return "bad"
	case "running", "acquired", "pending":
		return "live"
	}
	return "muted"
}
