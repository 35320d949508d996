package server

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/web"
)

// apiHandler is a route's handler; an error it returns is written in the API's error shape.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

type route struct {
	method, path string
	access       access
	h            apiHandler
}

// routeTable is every route the server serves. The OpenAPI document (openapi.json) must
// list exactly these; TestOpenAPIMatchesRoutes holds the two together.
func (s *Server) routeTable() []route {
	const v1 = "/api/v1"
	return []route{
		{"GET", "/healthz", public, s.healthz},
		{"GET", "/readyz", public, s.readyz},
		{"GET", "/metrics", authenticated, s.serveMetrics},
		{"GET", v1 + "/openapi.json", authenticated, serveOpenAPI},

		{"POST", v1 + "/auth/login", public, s.login},
		{"POST", v1 + "/auth/logout", authenticated, s.logout},
		{"GET", v1 + "/auth/me", authenticated, s.me},
		{"POST", v1 + "/auth/password", authenticated, s.changePassword},

		{"GET", v1 + "/tokens", adminOnly, s.listTokens},
		{"POST", v1 + "/tokens", adminOnly, s.createToken},
		{"DELETE", v1 + "/tokens/{id}", adminOnly, s.deleteToken},

		{"GET", v1 + "/jobs", authenticated, s.listJobs},
		{"POST", v1 + "/jobs", authenticated, s.createJob},
		{"GET", v1 + "/jobs/{id}", authenticated, s.getJob},
		{"PUT", v1 + "/jobs/{id}", authenticated, s.updateJob},
		{"DELETE", v1 + "/jobs/{id}", authenticated, s.deleteJob},
		{"POST", v1 + "/jobs/{id}/pause", authenticated, s.pauseJob},
		{"POST", v1 + "/jobs/{id}/resume", authenticated, s.resumeJob},
		{"POST", v1 + "/jobs/{id}/run", authenticated, s.runJob},
		{"GET", v1 + "/jobs/{id}/script/versions", authenticated, s.listScriptVersions},
		{"GET", v1 + "/jobs/{id}/script/versions/{version}", authenticated, s.getScriptVersion},
		{"POST", v1 + "/jobs/{id}/script/versions/{version}/restore", authenticated, s.restoreScriptVersion},
		{"GET", v1 + "/jobs/{id}/triggers", authenticated, s.listJobTriggers},
		{"POST", v1 + "/jobs/{id}/triggers", authenticated, s.addTrigger},

		{"GET", v1 + "/triggers/{id}", authenticated, s.getTrigger},
		{"DELETE", v1 + "/triggers/{id}", authenticated, s.deleteTrigger},
		{"POST", v1 + "/triggers/{id}/pause", authenticated, s.pauseTrigger},
		{"POST", v1 + "/triggers/{id}/resume", authenticated, s.resumeTrigger},

		{"GET", v1 + "/calendars", authenticated, s.listCalendars},
		{"GET", v1 + "/calendars/{name}", authenticated, s.getCalendar},
		{"PUT", v1 + "/calendars/{name}", authenticated, s.putCalendar},
		{"DELETE", v1 + "/calendars/{name}", authenticated, s.deleteCalendar},

		{"GET", v1 + "/executions", authenticated, s.listExecutions},
		{"GET", v1 + "/executions/{id}", authenticated, s.getExecution},
		{"GET", v1 + "/executions/{id}/output", authenticated, s.executionOutput},
		{"POST", v1 + "/executions/{id}/kill", authenticated, s.killExecution},
		{"POST", v1 + "/executions/{id}/retry", authenticated, s.retryExecution},

		{"GET", v1 + "/nodes", authenticated, s.listNodes},

		{"GET", v1 + "/reports/daily", authenticated, s.dailyReport},

		{"GET", v1 + "/apps", authenticated, s.listApps},
		{"GET", v1 + "/apps/{name}", authenticated, s.getApp},
		{"PUT", v1 + "/apps/{name}", authenticated, s.putApp},
		{"DELETE", v1 + "/apps/{name}", authenticated, s.deleteApp},
		{"GET", v1 + "/executors", authenticated, s.listExecutors},

		// The executor protocol: the executor token, not a person's credentials.
		{"POST", v1 + "/executor/register", public, s.executorAuth(s.executorRegister)},
		{"POST", v1 + "/executor/unregister", public, s.executorAuth(s.executorUnregister)},
		{"POST", v1 + "/executor/logs", public, s.executorAuth(s.executorLogs)},
		{"POST", v1 + "/executor/results", public, s.executorAuth(s.executorResults)},
	}
}

// routes registers the table, a JSON 405 for every path's other methods, and a JSON 404 for
// everything else, so every answer has the API's error shape.
func (s *Server) routes() {
	methods := map[string][]string{}
	level := map[string]access{}
	for _, rt := range s.routeTable() {
		s.mux.Handle(rt.method+" "+rt.path, s.guard(rt.access, rt.h))
		methods[rt.path] = append(methods[rt.path], rt.method)
		if _, ok := level[rt.path]; !ok || rt.access < level[rt.path] {
			level[rt.path] = rt.access
		}
	}
	for path, ms := range methods {
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		s.mux.Handle(path, s.guard(level[path], func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
				Message: r.Method + " is not allowed here; allowed: " + allow}
		}))
	}
	s.mux.Handle("/api/", s.guard(authenticated, func(w http.ResponseWriter, r *http.Request) error {
		return &apiError{Status: http.StatusNotFound, Code: "no_route", Message: "no route " + r.URL.Path}
	}))
}

// mountConsole serves the web console at every path the API does not take. The console
// makes its changes through the API, so it is handed the API's handler.
func (s *Server) mountConsole() error {
	c, err := web.New(web.Config{Store: s.store, Scheduler: s.sched, API: s.mux, Logger: s.log})
	if err != nil {
		return fmt.Errorf("server: console: %w", err)
	}
	s.mux.Handle("/", c)
	return nil
}

//go:embed openapi.json
var openAPIDoc []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openAPIDoc)
	return err
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	s.metrics.handler().ServeHTTP(w, r)
	return nil
}

// healthz answers while the process can serve HTTP.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 while the database answers and the node runs, so a load balancer sends
// traffic only to nodes that can act on it.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "engine": "ok"}
	ready := true
	if _, err := s.store.DBNow(ctx); err != nil {
		checks["database"], ready = err.Error(), false
	}
	if !s.running.Load() {
		checks["engine"], ready = "not running", false
	}
	status, code := "ok", http.StatusOK
	if !ready {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "checks": checks})
	return nil
}
