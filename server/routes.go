package server

import (
	"context"
	_ "embed"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/api"
)

// apiHandler is a route's handler; an error it returns is written in the API's error shape.
type apiHandler func(w http.ResponseWriter, r *http.Request) error

type route struct {
	method, path string
	// pol is who may call the route (policy.go); guard enforces it before h runs.
	pol policy
	h   apiHandler
}

// routeTable is every route the server serves. The OpenAPI document (openapi.json) must
// list exactly these; TestOpenAPIMatchesRoutes holds the two together.
func (s *Server) routeTable() []route {
	const v1 = "/api/v1"
	o := s.ops
	return []route{
		{"GET", "/healthz", publicRoute, s.healthz},
		{"GET", "/readyz", publicRoute, s.readyz},
		{"GET", "/metrics", read(nil), s.serveMetrics},
		{"GET", v1 + "/openapi.json", selfRoute, serveOpenAPI},
		opRoute("GET", v1+"/info", o.Info, nil, jsonStatus[api.Info](http.StatusOK)),

		{"POST", v1 + "/auth/login", publicRoute, s.login},
		{"POST", v1 + "/auth/logout", selfRoute, s.logout},
		opRoute("GET", v1+"/auth/me", o.Me, nil, jsonStatus[api.User](http.StatusOK)),
		opRoute("POST", v1+"/auth/password", o.ChangePassword, readBody, noContent),
		{"GET", v1 + "/auth/sso/login", publicRoute, s.ssoLogin},
		{"GET", v1 + "/auth/sso/callback", publicRoute, s.ssoCallback},

		opRoute("GET", v1+"/tokens", o.ListTokens, readTokenQuery, jsonStatus[api.Page[api.Token]](http.StatusOK)),
		opRoute("POST", v1+"/tokens", o.CreateToken, readBody, writeSecret[api.Token](http.StatusCreated)),
		opRoute("DELETE", v1+"/tokens/{id}", o.DeleteToken, readTokenRef, noContent),

		opRoute("GET", v1+"/users", o.ListUsers, readUserQuery, jsonStatus[api.Page[api.User]](http.StatusOK)),
		opRoute("POST", v1+"/users", o.CreateUser, readBody, writeUserCreated),
		opRoute("GET", v1+"/users/{id}", o.GetUser, readUserRef, jsonStatus[api.User](http.StatusOK)),
		opRoute("PATCH", v1+"/users/{id}", o.UpdateUser, readUserChange, jsonStatus[api.User](http.StatusOK)),
		opRoute("POST", v1+"/users/{id}/reset-password", o.ResetPassword, readUserRef, writeSecret[api.PasswordReset](http.StatusOK)),
		opRoute("POST", v1+"/auth/reset", o.RedeemReset, readBody, noContent),

		opRoute("GET", v1+"/audit", o.ListAudit, readAuditQuery, jsonStatus[api.Page[api.AuditEntry]](http.StatusOK)),

		opRoute("GET", v1+"/jobs", o.ListJobs, readJobQuery, writeJobPage),
		opRoute("POST", v1+"/jobs", o.CreateJob, readBody, writeJobCreated),
		opRoute("GET", v1+"/jobs/{id}", o.GetJob, readJobRef, writeOK(JobOut)),
		opRoute("PUT", v1+"/jobs/{id}", o.UpdateJob, readJobChange, jsonStatus[api.Job](http.StatusOK)),
		opRoute("DELETE", v1+"/jobs/{id}", o.DeleteJob, readJobDelete, noContent),
		opRoute("POST", v1+"/jobs/{id}/pause", o.PauseJob, readJobPause, jsonStatus[api.Job](http.StatusOK)),
		opRoute("POST", v1+"/jobs/{id}/resume", o.ResumeJob, readJobRef, jsonStatus[api.Job](http.StatusOK)),
		opRoute("POST", v1+"/jobs/{id}/run", o.RunJob, readJobRun, writeRunStarted),
		opRoute("GET", v1+"/jobs/{id}/script/versions", o.ListScriptVersions, readJobRef, writeScriptVersions),
		opRoute("GET", v1+"/jobs/{id}/script/versions/{version}", o.GetScriptVersion, readScriptVersionRef, writeOK(toScriptVersionOut)),
		opRoute("POST", v1+"/jobs/{id}/script/versions/{version}/restore", o.RestoreScriptVersion, readScriptVersionRef, writeOK(toScriptVersionOut)),
		opRoute("GET", v1+"/jobs/{id}/triggers", o.ListJobTriggers, readJobTriggers, writeTriggerPage),
		opRoute("POST", v1+"/jobs/{id}/triggers", o.AddTrigger, readTriggerAdd, writeTriggerAdded),

		opRoute("GET", v1+"/triggers/{id}", o.GetTrigger, readTriggerRef, writeOK(toTriggerOut)),
		opRoute("GET", v1+"/triggers/{id}/next", o.TriggerNext, readTriggerNext, jsonStatus[api.TriggerNext](http.StatusOK)),
		opRoute("POST", v1+"/jobs/{id}/backfills", o.CreateBackfill, readBackfillAdd, writeBackfillAdded),
		opRoute("GET", v1+"/jobs/{id}/backfills", o.ListBackfills, readJobRef, jsonStatus[[]api.Backfill](http.StatusOK)),
		opRoute("GET", v1+"/backfills/{id}", o.GetBackfill, readBackfillRef, jsonStatus[api.Backfill](http.StatusOK)),
		opRoute("POST", v1+"/backfills/{id}/cancel", o.CancelBackfill, readBackfillRef, jsonStatus[api.Backfill](http.StatusOK)),
		opRoute("DELETE", v1+"/triggers/{id}", o.DeleteTrigger, readTriggerRef, noContent),
		opRoute("POST", v1+"/triggers/{id}/pause", o.PauseTrigger, readTriggerRef, writeOK(toTriggerOut)),
		opRoute("PATCH", v1+"/triggers/{id}", o.UpdateTrigger, readTriggerPolicy, writeOK(toTriggerOut)),
		opRoute("POST", v1+"/triggers/{id}/resume", o.ResumeTrigger, readTriggerRef, writeOK(toTriggerOut)),

		opRoute("GET", v1+"/calendars", o.ListCalendars, readCalendarQuery, writeCalendarPage),
		opRoute("GET", v1+"/calendars/{name}", o.GetCalendar, readCalendarRef, writeOK(toCalendarOut)),
		opRoute("PUT", v1+"/calendars/{name}", o.PutCalendar, readCalendarPut, writeOK(toCalendarOut)),
		opRoute("DELETE", v1+"/calendars/{name}", o.DeleteCalendar, readCalendarRef, noContent),

		opRoute("GET", v1+"/workflows", o.ListWorkflows, readWorkflowQuery, writeWorkflowPage),
		opRoute("POST", v1+"/workflows", o.CreateWorkflow, readWorkflowCreate, writeWorkflowCreated),
		opRoute("GET", v1+"/workflows/{name}", o.GetWorkflow, readWorkflowRef, writeOK(toWorkflowOut)),
		opRoute("POST", v1+"/workflows/{name}/backfills", o.BackfillWorkflow, readWorkflowBackfillAdd, writeBackfillAdded),
		opRoute("POST", v1+"/workflows/{name}/run", o.RunWorkflow, readWorkflowRunStart, writeWorkflowRunStarted),
		opRoute("GET", v1+"/workflows/{name}/runs", o.ListWorkflowRuns, readWorkflowRunQuery, writeWorkflowRunPage),
		opRoute("GET", v1+"/workflow-runs/{id}", o.GetWorkflowRun, readWorkflowRunRef, writeOK(toWorkflowRunWithNodes)),
		opRoute("POST", v1+"/workflow-runs/{id}/cancel", o.CancelWorkflowRun, readWorkflowRunRef, writeOK(toWorkflowRunWithNodes)),
		opRoute("PUT", v1+"/workflows/{name}", o.UpdateWorkflow, readWorkflowChange, writeOK(toWorkflowOut)),
		opRoute("DELETE", v1+"/workflows/{name}", o.DeleteWorkflow, readWorkflowRef, noContent),
		opRoute("POST", v1+"/workflow-runs/{id}/retry", o.RetryWorkflowRun, readWorkflowRunRef, writeOK(toWorkflowRunWithNodes)),
		opRoute("POST", v1+"/workflow-runs/{id}/nodes/{node}/retry", o.RetryWorkflowNode, readWorkflowNodeRef, writeOK(toWorkflowRunWithNodes)),
		opRoute("POST", v1+"/workflow-runs/{id}/nodes/{node}/mark-succeeded", o.MarkWorkflowNode, readWorkflowNodeMark, writeOK(toWorkflowRunWithNodes)),

		opRoute("GET", v1+"/executions", o.ListExecutions, readExecutionQuery, writeExecutionPage),
		opRoute("GET", v1+"/executions/{id}", o.GetExecution, readExecutionRef, writeOK(toExecutionOut)),
		// A follow of the output streams server-sent events: the route is HTTP's own, over the
		// ExecutionOutput operation for a page of lines.
		{"GET", v1 + "/executions/{id}/output", read(byExecution), s.executionOutput},
		opRoute("POST", v1+"/executions/{id}/kill", o.KillExecution, readExecutionRef, writeKilled),
		opRoute("POST", v1+"/executions/{id}/retry", o.RetryExecution, readExecutionRef, writeRunStarted),
		opRoute("GET", v1+"/executions/{id}/subtasks", o.ListSubtasks, readSubtaskQuery, writeSubtaskPage),

		opRoute("GET", v1+"/nodes", o.ListNodes, nil, writePageOf(func(n api.Node) string { return n.ID })),

		{"GET", v1 + "/reports/daily", read(byJobQuery), s.dailyReport},

		opRoute("GET", v1+"/apps", o.ListApps, nil, writePageOf(func(a api.App) string { return a.Name })),
		opRoute("GET", v1+"/apps/{name}", o.GetApp, readAppRef, jsonStatus[api.App](http.StatusOK)),
		opRoute("PUT", v1+"/apps/{name}", o.PutApp, readAppPut, jsonStatus[api.App](http.StatusOK)),
		opRoute("DELETE", v1+"/apps/{name}", o.DeleteApp, readAppRef, noContent),
		opRoute("GET", v1+"/apps/{name}/credentials", o.ListCredentials, readAppRef, jsonStatus[[]api.AppCredential](http.StatusOK)),
		opRoute("POST", v1+"/apps/{name}/credentials", o.CreateCredential, readAppRef, writeSecret[api.AppCredential](http.StatusCreated)),
		opRoute("POST", v1+"/apps/{name}/credentials/rotate", o.RotateCredential, readAppRef, writeSecret[api.AppCredential](http.StatusOK)),
		opRoute("DELETE", v1+"/apps/{name}/credentials", o.RevokeCredential, readAppRef, noContent),
		opRoute("GET", v1+"/executors", o.ListExecutors, readAllOf,
			writePageOf(func(x api.Executor) string { return url.PathEscape(x.App) + "/" + x.Address })),

		// The executor protocol: an app's executor credential (or the deprecated executor token),
		// not a person's credentials.
		{"POST", v1 + "/executor/register", publicRoute, s.executorAuth(s.executorRegister)},
		{"POST", v1 + "/executor/unregister", publicRoute, s.executorAuth(s.executorUnregister)},
		{"POST", v1 + "/executor/logs", publicRoute, s.executorAuth(s.executorLogs)},
		{"POST", v1 + "/executor/results", publicRoute, s.executorAuth(s.executorResults)},
		// Map/reduce of remote handlers (executors_subtasks.go).
		{"POST", api.PathSubtasksMap, publicRoute, s.executorAuth(s.executorSubtasksMap)},
		{"POST", api.PathSubtasksClaim, publicRoute, s.executorAuth(s.executorSubtasksClaim)},
		{"POST", api.PathSubtasksResults, publicRoute, s.executorAuth(s.executorSubtasksResults)},
		{"POST", api.PathSubtasksList, publicRoute, s.executorAuth(s.executorSubtasksList)},
		{"POST", api.PathSubtasksReduced, publicRoute, s.executorAuth(s.executorSubtasksReduced)},
		// The stream transport: a WebSocket the executor opens and holds (executors_stream.go).
		{"GET", v1 + "/executor/stream", publicRoute, s.executorAuth(s.executorStream)},
	}
}

// routes registers the table, a JSON 405 for every path's other methods, and a JSON 404 for
// everything else, so every answer has the API's error shape.
func (s *Server) routes() {
	methods := map[string][]string{}
	// A path's other methods answer 405 to whoever could call one of its routes.
	level := map[string]policy{}
	for _, rt := range s.routeTable() {
		s.mux.Handle(rt.method+" "+rt.path, s.guard(rt.pol, rt.h))
		methods[rt.path] = append(methods[rt.path], rt.method)
		if l, ok := level[rt.path]; !ok || rt.pol.act < l.act {
			level[rt.path] = policy{act: min(rt.pol.act, ActSelf)}
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
	s.mux.Handle("/api/", s.guard(selfRoute, func(w http.ResponseWriter, r *http.Request) error {
		return &apiError{Status: http.StatusNotFound, Code: "no_route", Message: "no route " + r.URL.Path}
	}))
}

// MountConsole serves console, the web console (package web, which calls the service layer
// in process), at every path the API does not take. Mount it before serving.
func (s *Server) MountConsole(console http.Handler) {
	s.mux.Handle("/", console)
}

// SSOLogin is the single sign-on start the console's login page offers, empty without SSO.
func (s *Server) SSOLogin() string {
	if s.sso == nil {
		return ""
	}
	return "/api/v1/auth/sso/login"
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
