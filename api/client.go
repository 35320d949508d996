package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one Sundial server's REST API. Every method takes the context first and
// returns, for an answer other than 2xx, an *Error carrying the status, code, message and
// field the server sent.
type Client struct {
	base  string // e.g. http://localhost:8080, without a trailing slash
	token string
	hc    *http.Client
	// timeout bounds one request other than a stream; 0 leaves it to the context.
	timeout time.Duration
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with hc instead of a client of the client's own.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRequestTimeout bounds each request but the output stream, so a hung server fails the
// call instead of hanging it.
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// NewClient returns a client of the server at baseURL (http or https) that authenticates
// with token (empty: none, or a session after Login).
func NewClient(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want one such as http://localhost:8080", baseURL)
	}
	// No overall timeout on the http.Client: the output stream lasts as long as its run.
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL is the server's URL the client was made with.
func (c *Client) BaseURL() string { return c.base }

// ListOptions select one page of a list: at most Limit items (0: the server's default)
// after the cursor After (a previous page's Next).
type ListOptions struct {
	Limit int
	After string
}

// HasToken reports whether the client sends an API token.
func (c *Client) HasToken() bool { return c.token != "" }

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	return q
}

const v1 = "/api/v1"

func idPath(prefix string, id int64, suffix string) string {
	return v1 + prefix + "/" + strconv.FormatInt(id, 10) + suffix
}

func namePath(prefix, name string) string { return v1 + prefix + "/" + url.PathEscape(name) }

// call sends one request and decodes a 2xx answer's body into out (when not nil). body,
// when not nil, is sent as JSON.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, method, path, query, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx answer with its body open; any other answer is
// returned as an *Error.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body any, accept string) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, responseError(method, path, resp)
}

// responseError reads the server's error body. An answer that is not in the API's shape (a
// proxy, or another service on that port) becomes an Error without a code that quotes it.
func responseError(method, path string, resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error.Message == "" {
		text := strings.TrimSpace(string(b))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return &Error{Status: resp.StatusCode, Message: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, text)}
	}
	eb.Error.Status = resp.StatusCode
	return &eb.Error
}

// Login starts a cookie session with a user's password; the session then authenticates
// the client's requests instead of its token.
func (c *Client) Login(ctx context.Context, username, password string) (*User, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	hc := *c.hc
	hc.Jar = jar
	c.hc, c.token = &hc, ""
	var u User
	if err := c.call(ctx, "POST", v1+"/auth/login", nil, LoginRequest{Username: username, Password: password}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// Logout ends the client's session.
func (c *Client) Logout(ctx context.Context) error {
	return c.call(ctx, "POST", v1+"/auth/logout", nil, nil, nil)
}

// Me returns the user the client authenticates as.
func (c *Client) Me(ctx context.Context) (*User, error) {
	return get[User](ctx, c, v1+"/auth/me", nil)
}

// ChangePassword changes the authenticated user's password.
func (c *Client) ChangePassword(ctx context.Context, req PasswordRequest) error {
	return c.call(ctx, "POST", v1+"/auth/password", nil, req, nil)
}

func get[T any](ctx context.Context, c *Client, path string, q url.Values) (*T, error) {
	var v T
	if err := c.call(ctx, "GET", path, q, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func post[T any](ctx context.Context, c *Client, method, path string, body any) (*T, error) {
	var v T
	if err := c.call(ctx, method, path, nil, body, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Jobs.

// CreateJob creates a job with its triggers.
func (c *Client) CreateJob(ctx context.Context, req JobRequest) (*Job, error) {
	return post[Job](ctx, c, "POST", v1+"/jobs", req)
}

// ListJobs lists the jobs f selects, by id.
func (c *Client) ListJobs(ctx context.Context, f JobFilter, o ListOptions) (*Page[Job], error) {
	q := o.query()
	for k, v := range map[string]string{"group": f.Group, "app": f.App, "handler": f.Handler, "state": f.State, "name_prefix": f.NamePrefix} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return get[Page[Job]](ctx, c, v1+"/jobs", q)
}

// JobFilter selects jobs; the zero value selects all. State is enabled, disabled, paused
// (a trigger of the job is paused), failing (its newest ended run failed, timed out or was
// lost), or a trigger state: waiting, complete, error.
type JobFilter struct {
	Group, App, Handler string
	State               string
	NamePrefix          string
}

// Info returns which Sundial the answering node runs.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	return get[Info](ctx, c, v1+"/info", nil)
}

// FindJob returns the job called name in group, or name "GROUP/NAME" (group "" is the
// default group), with its triggers; a missing job is the API's 404.
func (c *Client) FindJob(ctx context.Context, group, name string) (*Job, error) {
	q := url.Values{"name": {name}}
	if group != "" {
		q.Set("group", group)
	}
	pg, err := get[Page[Job]](ctx, c, v1+"/jobs", q)
	if err != nil {
		return nil, err
	}
	if len(pg.Items) == 0 {
		g, n := SplitJobKey(group, name)
		return nil, &Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("job %s/%s not found", g, n)}
	}
	return c.GetJob(ctx, pg.Items[0].ID)
}

// GetJob returns a job with its triggers.
func (c *Client) GetJob(ctx context.Context, id int64) (*Job, error) {
	return get[Job](ctx, c, idPath("/jobs", id, ""), nil)
}

// UpdateJob replaces a job's settings (not its triggers).
func (c *Client) UpdateJob(ctx context.Context, id int64, req JobRequest) (*Job, error) {
	req.Triggers = nil
	return post[Job](ctx, c, "PUT", idPath("/jobs", id, ""), req)
}

// ScriptVersions lists the kept versions of a shell job's script, newest first.
func (c *Client) ScriptVersions(ctx context.Context, jobID int64) ([]ScriptVersion, error) {
	p, err := get[Page[ScriptVersion]](ctx, c, idPath("/jobs", jobID, "/script/versions"), nil)
	if err != nil {
		return nil, err
	}
	return p.Items, nil
}

// ScriptVersion returns one kept version of a shell job's script.
func (c *Client) ScriptVersion(ctx context.Context, jobID, version int64) (*ScriptVersion, error) {
	return get[ScriptVersion](ctx, c, idPath("/jobs", jobID, "/script/versions/"+strconv.FormatInt(version, 10)), nil)
}

// RestoreScriptVersion makes a kept version the job's script and returns the new version
// that records the restore.
func (c *Client) RestoreScriptVersion(ctx context.Context, jobID, version int64) (*ScriptVersion, error) {
	return post[ScriptVersion](ctx, c, "POST", idPath("/jobs", jobID, "/script/versions/"+strconv.FormatInt(version, 10)+"/restore"), nil)
}

// DeleteJob deletes a job and its triggers. A job with runs in progress is refused unless
// force: they then finish, and their results and output are kept.
func (c *Client) DeleteJob(ctx context.Context, id int64, force bool) error {
	path := idPath("/jobs", id, "")
	if force {
		path += "?force=true"
	}
	return c.call(ctx, "DELETE", path, nil, nil, nil)
}

// PauseJob pauses every trigger of the job and returns the job.
func (c *Client) PauseJob(ctx context.Context, id int64) (*Job, error) {
	return post[Job](ctx, c, "POST", idPath("/jobs", id, "/pause"), nil)
}

// PauseJobNoted is PauseJob with a note saying why; the job shows it, with who paused it and
// when, until it is resumed.
func (c *Client) PauseJobNoted(ctx context.Context, id int64, note string) (*Job, error) {
	return post[Job](ctx, c, "POST", idPath("/jobs", id, "/pause"), map[string]string{"note": note})
}

// ResumeJob resumes the job's triggers and returns the job.
func (c *Client) ResumeJob(ctx context.Context, id int64) (*Job, error) {
	return post[Job](ctx, c, "POST", idPath("/jobs", id, "/resume"), nil)
}

// RunJob fires the job once now and returns the new execution.
func (c *Client) RunJob(ctx context.Context, id int64) (*Execution, error) {
	return post[Execution](ctx, c, "POST", idPath("/jobs", id, "/run"), nil)
}

// RunJobWith fires the job once now with req's params in place of the job's.
func (c *Client) RunJobWith(ctx context.Context, id int64, req RunRequest) (*Execution, error) {
	return post[Execution](ctx, c, "POST", idPath("/jobs", id, "/run"), req)
}

// Backfills.

// Backfill runs the job for every scheduled time of its trigger in req's range; with
// req.DryRun it returns the plan (Plan) and stores nothing.
func (c *Client) Backfill(ctx context.Context, jobID int64, req BackfillRequest) (*Backfill, error) {
	return post[Backfill](ctx, c, "POST", idPath("/jobs", jobID, "/backfills"), req)
}

// ListBackfills lists the job's backfills, newest first.
func (c *Client) ListBackfills(ctx context.Context, jobID int64) ([]Backfill, error) {
	bs, err := get[[]Backfill](ctx, c, idPath("/jobs", jobID, "/backfills"), nil)
	if err != nil {
		return nil, err
	}
	return *bs, nil
}

// GetBackfill returns a backfill and its progress.
func (c *Client) GetBackfill(ctx context.Context, id int64) (*Backfill, error) {
	return get[Backfill](ctx, c, idPath("/backfills", id, ""), nil)
}

// CancelBackfill stops a backfill: no further run, and its runs not started are canceled.
func (c *Client) CancelBackfill(ctx context.Context, id int64) (*Backfill, error) {
	return post[Backfill](ctx, c, "POST", idPath("/backfills", id, "/cancel"), nil)
}

// Triggers.

// ListTriggers lists a job's triggers.
func (c *Client) ListTriggers(ctx context.Context, jobID int64, o ListOptions) (*Page[Trigger], error) {
	return get[Page[Trigger]](ctx, c, idPath("/jobs", jobID, "/triggers"), o.query())
}

// AddTrigger adds a trigger to a job.
func (c *Client) AddTrigger(ctx context.Context, jobID int64, req TriggerRequest) (*Trigger, error) {
	return post[Trigger](ctx, c, "POST", idPath("/jobs", jobID, "/triggers"), req)
}

// GetTrigger returns a trigger.
func (c *Client) GetTrigger(ctx context.Context, id int64) (*Trigger, error) {
	return get[Trigger](ctx, c, idPath("/triggers", id, ""), nil)
}

// TriggerNext previews a stored trigger's next n fire times (the server's default, 10, when
// n is 0).
func (c *Client) TriggerNext(ctx context.Context, id int64, n int) (*TriggerNext, error) {
	return c.TriggerNextAfter(ctx, id, time.Time{}, n)
}

// TriggerNextAfter lists a stored trigger's n fire times strictly after the instant (from
// now, as TriggerNext, when it is zero).
func (c *Client) TriggerNextAfter(ctx context.Context, id int64, after time.Time, n int) (*TriggerNext, error) {
	q := url.Values{}
	if n != 0 {
		q.Set("n", strconv.Itoa(n))
	}
	if !after.IsZero() {
		q.Set("after", after.Format(time.RFC3339Nano))
	}
	return get[TriggerNext](ctx, c, idPath("/triggers", id, "/next"), q)
}

// DeleteTrigger deletes a trigger.
func (c *Client) DeleteTrigger(ctx context.Context, id int64) error {
	return c.call(ctx, "DELETE", idPath("/triggers", id, ""), nil, nil, nil)
}

// PauseTrigger pauses a trigger and returns it.
func (c *Client) PauseTrigger(ctx context.Context, id int64) (*Trigger, error) {
	return post[Trigger](ctx, c, "POST", idPath("/triggers", id, "/pause"), nil)
}

// UpdateTrigger changes a trigger's policies (the fields p sets) and returns it.
func (c *Client) UpdateTrigger(ctx context.Context, id int64, p TriggerPolicy) (*Trigger, error) {
	return post[Trigger](ctx, c, "PATCH", idPath("/triggers", id, ""), p)
}

// ResumeTrigger resumes a trigger and returns it.
func (c *Client) ResumeTrigger(ctx context.Context, id int64) (*Trigger, error) {
	return post[Trigger](ctx, c, "POST", idPath("/triggers", id, "/resume"), nil)
}

// Calendars.

// PutCalendar stores a calendar under name, replacing one of that name.
func (c *Client) PutCalendar(ctx context.Context, name string, req CalendarRequest) (*Calendar, error) {
	return post[Calendar](ctx, c, "PUT", namePath("/calendars", name), req)
}

// GetCalendar returns a stored calendar.
func (c *Client) GetCalendar(ctx context.Context, name string) (*Calendar, error) {
	return get[Calendar](ctx, c, namePath("/calendars", name), nil)
}

// ListCalendars lists the stored calendars by name.
func (c *Client) ListCalendars(ctx context.Context, o ListOptions) (*Page[Calendar], error) {
	return get[Page[Calendar]](ctx, c, v1+"/calendars", o.query())
}

// DeleteCalendar deletes a calendar no trigger or calendar refers to.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", namePath("/calendars", name), nil, nil, nil)
}

// Executions.

// ExecutionFilter selects executions; the zero value selects all, newest first. The times
// are RFC 3339, passed to the server as given.
type ExecutionFilter struct {
	JobID int64
	// App keeps the executions of the app's jobs, Cause those of one cause (manual, retry, ...).
	App   string
	State string
	Cause string
	// Executor keeps the executions sent to the executor at this address.
	Executor string
	// AlarmState keeps the executions whose alarm is none, pending, sending, sent or failed:
	// "sending" lists the alarms being delivered, or left so by a node that died (the alarm
	// sweep sends those again).
	AlarmState string
	Order      string // asc or desc
	From, To   string
}

// ListExecutions lists executions.
func (c *Client) ListExecutions(ctx context.Context, f ExecutionFilter, o ListOptions) (*Page[Execution], error) {
	q := o.query()
	if f.JobID != 0 {
		q.Set("job_id", strconv.FormatInt(f.JobID, 10))
	}
	for k, v := range map[string]string{"app": f.App, "state": f.State, "cause": f.Cause, "executor": f.Executor,
		"alarm_state": f.AlarmState, "order": f.Order, "from": f.From, "to": f.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return get[Page[Execution]](ctx, c, v1+"/executions", q)
}

// GetExecution returns an execution.
func (c *Client) GetExecution(ctx context.Context, id int64) (*Execution, error) {
	return get[Execution](ctx, c, idPath("/executions", id, ""), nil)
}

// ExecutionOutput returns a page of an execution's output lines (After is a line number).
func (c *Client) ExecutionOutput(ctx context.Context, id int64, o ListOptions) (*Page[LogLine], error) {
	return get[Page[LogLine]](ctx, c, idPath("/executions", id, "/output"), o.query())
}

// KillExecution stops a run, on its executor or on the node that runs it in process, and
// returns the execution.
func (c *Client) KillExecution(ctx context.Context, id int64) (*Execution, error) {
	return post[Execution](ctx, c, "POST", idPath("/executions", id, "/kill"), nil)
}

// RetryExecution runs an ended execution again now and returns the new execution.
func (c *Client) RetryExecution(ctx context.Context, id int64) (*Execution, error) {
	return post[Execution](ctx, c, "POST", idPath("/executions", id, "/retry"), nil)
}

// Cluster, tokens, apps, reports.

// ListNodes lists the cluster's nodes.
func (c *Client) ListNodes(ctx context.Context, o ListOptions) (*Page[Node], error) {
	return get[Page[Node]](ctx, c, v1+"/nodes", o.query())
}

// CreateToken creates an API token; the returned Token carries its secret, once.
func (c *Client) CreateToken(ctx context.Context, req TokenRequest) (*Token, error) {
	return post[Token](ctx, c, "POST", v1+"/tokens", req)
}

// ListTokens lists API tokens (without their secrets).
func (c *Client) ListTokens(ctx context.Context, o ListOptions) (*Page[Token], error) {
	return get[Page[Token]](ctx, c, v1+"/tokens", o.query())
}

// DeleteToken revokes an API token.
func (c *Client) DeleteToken(ctx context.Context, id int64) error {
	return c.call(ctx, "DELETE", idPath("/tokens", id, ""), nil, nil, nil)
}

// ListApps lists the apps (executor groups), by name.
func (c *Client) ListApps(ctx context.Context, o ListOptions) (*Page[App], error) {
	return get[Page[App]](ctx, c, v1+"/apps", o.query())
}

// GetApp returns an app.
func (c *Client) GetApp(ctx context.Context, name string) (*App, error) {
	return get[App](ctx, c, namePath("/apps", name), nil)
}

// PutApp creates or replaces an app.
func (c *Client) PutApp(ctx context.Context, name string, req AppRequest) (*App, error) {
	return post[App](ctx, c, "PUT", namePath("/apps", name), req)
}

// DeleteApp deletes an app no job refers to.
func (c *Client) DeleteApp(ctx context.Context, name string) error {
	return c.call(ctx, "DELETE", namePath("/apps", name), nil, nil, nil)
}

// ListExecutors lists the live executor instances, of one app when app is not empty.
func (c *Client) ListExecutors(ctx context.Context, app string, o ListOptions) (*Page[Executor], error) {
	q := o.query()
	if app != "" {
		q.Set("app", app)
	}
	return get[Page[Executor]](ctx, c, v1+"/executors", q)
}

// ReportFilter selects the daily report's days (YYYY-MM-DD; empty for the server's default
// range, the last seven days) and, with JobID, one job.
type ReportFilter struct {
	From, To string
	JobID    int64
}

// DailyReport returns the daily report: a row per day and the totals.
func (c *Client) DailyReport(ctx context.Context, f ReportFilter) (*Report, error) {
	q := url.Values{}
	if f.From != "" {
		q.Set("from", f.From)
	}
	if f.To != "" {
		q.Set("to", f.To)
	}
	if f.JobID != 0 {
		q.Set("job_id", strconv.FormatInt(f.JobID, 10))
	}
	return get[Report](ctx, c, v1+"/reports/daily", q)
}

// OutputEvent is one event of an execution's output stream: a line, or the end, which
// carries the execution as it ended. Data is the event's JSON as the server sent it.
type OutputEvent struct {
	Line *LogLine
	End  *Execution
	Data []byte
}

// FollowOutput streams an execution's output lines after line number after, calling fn for
// each event, until the end event (ended is true), ctx ends, or the server closes the stream
// (as it does when it shuts down): the caller may follow again after the last line it saw.
func (c *Client) FollowOutput(ctx context.Context, id, after int64, fn func(OutputEvent) error) (ended bool, err error) {
	q := url.Values{"follow": {"true"}}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	path := idPath("/executions", id, "/output")
	resp, err := c.send(ctx, "GET", path, q, nil, "text/event-stream")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	ended, err = readEvents(resp.Body, func(event string, data []byte) error {
		ev := OutputEvent{Data: data}
		switch event {
		case "line":
			ev.Line = new(LogLine)
			if err := json.Unmarshal(data, ev.Line); err != nil {
				return fmt.Errorf("decode output line %s: %w", data, err)
			}
		case "end":
			ev.End = new(Execution)
			if err := json.Unmarshal(data, ev.End); err != nil {
				return fmt.Errorf("decode end event %s: %w", data, err)
			}
		default:
			return nil
		}
		return fn(ev)
	})
	if err != nil && ctx.Err() == nil {
		return ended, fmt.Errorf("GET %s: %w", path, err)
	}
	return ended, nil
}

// CreateAppCredential makes the app's executor credential (an app has one); the secret is in
// the answer only.
func (c *Client) CreateAppCredential(ctx context.Context, app string) (*AppCredential, error) {
	return post[AppCredential](ctx, c, "POST", namePath("/apps", app)+"/credentials", nil)
}

// RotateAppCredential replaces the app's executor credential: the old secret stops working at
// once. The new secret is in the answer only.
func (c *Client) RotateAppCredential(ctx context.Context, app string) (*AppCredential, error) {
	return post[AppCredential](ctx, c, "POST", namePath("/apps", app)+"/credentials/rotate", nil)
}

// RevokeAppCredential deletes the app's executor credential: executors presenting it are
// refused from their next request on.
func (c *Client) RevokeAppCredential(ctx context.Context, app string) error {
	return c.call(ctx, "DELETE", namePath("/apps", app)+"/credentials", nil, nil, nil)
}

// ListAppCredentials lists the app's executor credentials (without secrets).
func (c *Client) ListAppCredentials(ctx context.Context, app string) ([]AppCredential, error) {
	out, err := get[[]AppCredential](ctx, c, namePath("/apps", app)+"/credentials", nil)
	if err != nil {
		return nil, err
	}
	return *out, nil
}
