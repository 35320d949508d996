package api

import (
	"encoding/json"
	"strings"
	"time"
)

// Page is one page of a keyset-paginated list. Next is the cursor to pass as ?after= for the
// following page; it is absent on the last page.
type Page[T any] struct {
	Items []T     `json:"items"`
	Next  *string `json:"next,omitempty"`
}

// JobRequest is the body of POST /jobs (with Triggers) and PUT /jobs/{id} (without: a job's
// triggers are changed under /triggers). The server rejects unknown fields.
type JobRequest struct {
	Group       string `json:"group,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Handler     string `json:"handler"`
	App         string `json:"app,omitempty"`
	Routing     string `json:"routing,omitempty"`
	Params      string `json:"params,omitempty"`
	// ParamsSecret stores Params encrypted: they are shown as "***" and handed in clear only
	// to runs. On PUT, params "***" keeps the stored secret.
	ParamsSecret bool `json:"params_secret,omitempty"`
	// ScriptNote is the note of the script version a save of a shell job records when its
	// params (the script) change; at most 500 characters.
	ScriptNote       string         `json:"script_note,omitempty"`
	Data             map[string]any `json:"data,omitempty"`
	Concurrency      string         `json:"concurrency,omitempty"`
	MaxConcurrent    int            `json:"max_concurrent,omitempty"`
	PersistData      bool           `json:"persist_data,omitempty"`
	RequestsRecovery bool           `json:"requests_recovery,omitempty"`
	TimeoutMs        int64          `json:"timeout_ms,omitempty"`
	MaxRetries       int            `json:"max_retries,omitempty"`
	RetryBackoffMs   int64          `json:"retry_backoff_ms,omitempty"`
	// DispatchTimeoutMs is how long a fire of a remote job that finds no executor online
	// waits for one before it fails; 0 for the server's --executor-wait.
	DispatchTimeoutMs int64    `json:"dispatch_timeout_ms,omitempty"`
	AlarmTargets      []string `json:"alarm_targets,omitempty"`
	// AlarmPolicy says when AlarmTargets are told; absent: of every final failure.
	AlarmPolicy *AlarmPolicy `json:"alarm_policy,omitempty"`
	// ChildJobIDs are fired when a run succeeds; each must be another existing job the caller
	// may run.
	ChildJobIDs []int64          `json:"child_job_ids,omitempty"`
	Triggers    []TriggerRequest `json:"triggers,omitempty"`
	// PauseAfterFailures pauses the job, with a note, after that many of its runs in a row
	// failed for good (1 to 1000; 0: never).
	PauseAfterFailures int `json:"pause_after_failures,omitempty"`
}

// Job is a job as the API returns it.
type Job struct {
	ID               int64          `json:"id"`
	Group            string         `json:"group"`
	Name             string         `json:"name"`
	Description      string         `json:"description"`
	Target           string         `json:"target"`
	App              string         `json:"app,omitempty"`
	Routing          string         `json:"routing,omitempty"`
	Handler          string         `json:"handler"`
	Params           string         `json:"params"`
	ParamsSecret     bool           `json:"params_secret"`
	Data             map[string]any `json:"data"`
	Concurrency      string         `json:"concurrency"`
	MaxConcurrent    int            `json:"max_concurrent,omitempty"`
	PersistData      bool           `json:"persist_data"`
	RequestsRecovery bool           `json:"requests_recovery"`
	TimeoutMs        int64          `json:"timeout_ms"`
	MaxRetries       int            `json:"max_retries"`
	RetryBackoffMs   int64          `json:"retry_backoff_ms"`
	// DispatchTimeoutMs: see JobRequest; 0 for the server's default.
	DispatchTimeoutMs int64       `json:"dispatch_timeout_ms"`
	AlarmTargets      []string    `json:"alarm_targets"`
	AlarmPolicy       AlarmPolicy `json:"alarm_policy"`
	ChildJobIDs       []int64     `json:"child_job_ids"`
	Enabled           bool        `json:"enabled"`
	// Paused: a trigger of the job is paused and none waits to fire, so it will not fire
	// until resumed (a job without triggers is not paused; it only runs when run by hand).
	Paused    bool `json:"paused"`
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
	// Triggers are included when one job is returned.
	Triggers []Trigger `json:"triggers,omitempty"`
	// Warnings tell what may not work as meant, such as a handler no node here runs.
	Warnings []string `json:"warnings,omitempty"`
	// PausedBy, PauseNote and PausedAt say who paused the job, why and when (a pause with a
	// note, or pause on failure); absent when it was not paused so.
	PausedBy  string `json:"paused_by,omitempty"`
	PauseNote string `json:"pause_note,omitempty"`
	PausedAt  *Time  `json:"paused_at,omitempty"`
	// PauseAfterFailures is the job's pause on failure; ConsecutiveFailures its runs in a row
	// that failed for good so far.
	PauseAfterFailures  int `json:"pause_after_failures,omitempty"`
	ConsecutiveFailures int `json:"consecutive_failures,omitempty"`
}

// Request returns the job's settings as a request body, for a PUT that changes some.
func (j *Job) Request() JobRequest {
	return JobRequest{Group: j.Group, Name: j.Name, Description: j.Description, Handler: j.Handler, App: j.App,
		Routing: j.Routing, Params: j.Params, ParamsSecret: j.ParamsSecret, Data: j.Data, Concurrency: j.Concurrency, MaxConcurrent: j.MaxConcurrent, PauseAfterFailures: j.PauseAfterFailures, PersistData: j.PersistData,
		RequestsRecovery: j.RequestsRecovery, TimeoutMs: j.TimeoutMs, MaxRetries: j.MaxRetries,
		RetryBackoffMs: j.RetryBackoffMs, DispatchTimeoutMs: j.DispatchTimeoutMs, AlarmTargets: j.AlarmTargets, AlarmPolicy: &j.AlarmPolicy, ChildJobIDs: j.ChildJobIDs}
}

// AlarmPolicy is when a job's alarm targets are told (docs/policies.md, "Alert channels").
type AlarmPolicy struct {
	// Threshold is how many failures raise an alarm: in a row, or within WindowMs when set.
	// 0 or 1: every failure with no retry left.
	Threshold int `json:"threshold"`
	// WindowMs counts Threshold failures within this many milliseconds instead of in a row.
	WindowMs int64 `json:"window_ms"`
	// SilenceMs is how long after an alarm no other alarm of the job goes out.
	SilenceMs int64 `json:"silence_ms"`
	// Recovery tells the targets when the job succeeds again after an alarm.
	Recovery bool `json:"recovery"`
}

// ScriptVersion is one kept save of a shell job's script, newest first in lists.
type ScriptVersion struct {
	Version   int64  `json:"version"`
	Script    string `json:"script"`
	Note      string `json:"note"`
	CreatedAt Time   `json:"created_at"`
}

// TriggerRequest is a trigger as a request gives it: a schedule and when and how it fires.
type TriggerRequest struct {
	Group string `json:"group,omitempty"`
	Name  string `json:"name,omitempty"`
	Schedule
	// Start and End are RFC 3339 times; Start defaults to now, End to none.
	Start    string `json:"start,omitempty"`
	End      string `json:"end,omitempty"`
	Calendar string `json:"calendar,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Misfire  string `json:"misfire,omitempty"`
	// Description says what the trigger is for. Params, when set, are given to the trigger's
	// fires in place of the job's (sealed like the job's when those are secret; a script job
	// takes none); Data is merged over the job's data for each of its fires.
	Description string         `json:"description,omitempty"`
	Params      string         `json:"params,omitempty"`
	Data        map[string]any `json:"data,omitempty"`
	// JitterMs spreads the fires: each starts up to this long after its scheduled time (an
	// offset fixed by the trigger and the scheduled time; the fire keeps its scheduled time).
	// DST is quartz (default), once or once_skip_gap (docs/policies.md).
	JitterMs int64  `json:"jitter_ms,omitempty"`
	DST      string `json:"dst,omitempty"`
	// CatchUpWindow (a Go duration, "2h") is how late a fire may be before the misfire policy
	// applies; empty: the cluster's misfire threshold. CatchUp "coalesce" makes the fires
	// missed past the window one run covering the whole gap; empty: the misfire policy.
	CatchUpWindow string `json:"catchup_window,omitempty"`
	CatchUp       string `json:"catchup,omitempty"`
	// RemainingRuns, when set, is how many more times the trigger fires (1 to 1000000000); it
	// completes at 0.
	RemainingRuns int64 `json:"remaining_runs,omitempty"`
	// Zones, when it lists more than one IANA zone, makes the trigger fire at its schedule's
	// times in each zone, each fire with its zone (time_zone, if given, must be the first).
	Zones []string `json:"zones,omitempty"`
}

// TriggerPolicy is the body of PATCH /triggers/{id}: the trigger's policies to change (see
// TriggerRequest); an absent field keeps the trigger's. An empty catchup_window goes back to
// the cluster's misfire threshold, an empty catchup to the misfire policy alone.
type TriggerPolicy struct {
	Misfire       *string `json:"misfire,omitempty"`
	CatchUpWindow *string `json:"catchup_window,omitempty"`
	CatchUp       *string `json:"catchup,omitempty"`
	JitterMs      *int64  `json:"jitter_ms,omitempty"`
	DST           *string `json:"dst,omitempty"`
	Priority      *int    `json:"priority,omitempty"`
}

// Trigger is a trigger as the API shows it.
type Trigger struct {
	ID    int64  `json:"id"`
	JobID int64  `json:"job_id"`
	Group string `json:"group"`
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Schedule
	Start        Time   `json:"start"`
	End          Time   `json:"end"`
	Calendar     string `json:"calendar,omitempty"`
	Priority     int    `json:"priority"`
	Misfire      string `json:"misfire"`
	State        string `json:"state"`
	ErrorMessage string `json:"error_message,omitempty"`
	NextFireAt   Time   `json:"next_fire_at"`
	PrevFireAt   Time   `json:"prev_fire_at"`
	TimesFired   int64  `json:"times_fired"`
	// CatchUpWindow and CatchUp are the trigger's catch-up policy (see TriggerRequest).
	CatchUpWindow string `json:"catchup_window,omitempty"`
	CatchUp       string `json:"catchup,omitempty"`
	CreatedAt     Time   `json:"created_at"`
	UpdatedAt     Time   `json:"updated_at"`
	// Description, Params and Data are the trigger's own (see TriggerRequest); sealed params
	// are shown as "***".
	Description string         `json:"description,omitempty"`
	Params      string         `json:"params,omitempty"`
	Data        map[string]any `json:"data,omitempty"`
	// JitterMs and DST are the trigger's schedule policies (see TriggerRequest).
	JitterMs int64  `json:"jitter_ms"`
	DST      string `json:"dst"`
	// Warnings, on the answer to adding a trigger, tell what may not work as meant, such as
	// cron syntax Quartz reads leniently (MON/2 is MON).
	Warnings []string `json:"warnings,omitempty"`
	// RemainingRuns is how many more times a trigger with limited runs fires; absent for one
	// without a limit.
	RemainingRuns *int64 `json:"remaining_runs,omitempty"`
	// Zones lists the zones of a trigger of several zones, time_zone first; absent for one.
	Zones []string `json:"zones,omitempty"`
}

// CalendarRequest is the body of PUT /calendars/{name}.
type CalendarRequest struct {
	Description string `json:"description,omitempty"`
	// Spec is one calendar in the form `sundial schedule next --calendar` takes:
	// holiday:2024-12-25, weekly:1,7, monthly:1,15, annual:12-25, daily:12:00-13:00, cron:EXPR.
	Spec string `json:"spec"`
	// Base names another stored calendar whose exclusions add to this one's.
	Base string `json:"base,omitempty"`
	// Zone is the IANA zone the calendar's exclusions are read in; empty: the zone of the
	// trigger it modifies.
	Zone string `json:"zone,omitempty"`
}

// Calendar is a stored exclusion calendar.
type Calendar struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Spec        string `json:"spec"`
	Base        string `json:"base,omitempty"`
	Zone        string `json:"zone,omitempty"`
	UpdatedAt   Time   `json:"updated_at"`
}

// Execution is one run of a job (or one shard of a sharding-broadcast run).
type Execution struct {
	ID          int64  `json:"id"`
	JobID       int64  `json:"job_id"`
	TriggerID   int64  `json:"trigger_id,omitempty"`
	ScheduledAt Time   `json:"scheduled_at"`
	FiredAt     Time   `json:"fired_at"`
	Cause       string `json:"cause"`
	Attempt     int    `json:"attempt"`
	Node        string `json:"node,omitempty"`
	State       string `json:"state"`
	HandleCode  int    `json:"handle_code"`
	HandleMsg   string `json:"handle_msg,omitempty"`
	TriggerMsg  string `json:"trigger_msg,omitempty"`
	StartedAt   Time   `json:"started_at"`
	FinishedAt  Time   `json:"finished_at"`
	// ExecutorAddress is the executor a remote job's run was sent to; ShardIndex and
	// ShardTotal are its shard of a sharding-broadcast.
	ExecutorAddress string `json:"executor_address,omitempty"`
	ShardIndex      int    `json:"shard_index"`
	ShardTotal      int    `json:"shard_total,omitempty"`
	// AlarmState is none, or for a final failure of a job with alarm targets pending,
	// sending, sent or failed.
	AlarmState string `json:"alarm_state"`
	// ScriptVersion is, for a script job, the version of its script the run was given (the
	// job's current one when the run was marked running).
	ScriptVersion int64 `json:"script_version,omitempty"`
	// Params are a run-now's own params, given in place of the job's; empty when the run got
	// the job's.
	Params string `json:"params,omitempty"`
	// OutputLost counts the run's output lines that never reached the server (the executor
	// gave up sending them): when not 0, the output shown is cut.
	OutputLost int64 `json:"output_lost,omitempty"`
	// IntervalStart and IntervalEnd are the run's data interval (the scheduled time before
	// this one and this one; for a coalesced catch-up or a backfill chunk the span covered);
	// absent for runs no schedule made. BackfillID names the backfill that made the run.
	IntervalStart Time  `json:"interval_start,omitzero"`
	IntervalEnd   Time  `json:"interval_end,omitzero"`
	BackfillID    int64 `json:"backfill_id,omitempty"`
	// FireZone is the zone the schedule fired in (a trigger of several zones fires in each).
	FireZone string `json:"fire_zone,omitempty"`
}

// BackfillRequest is the body of POST /jobs/{id}/backfills: run the job for every scheduled
// time of its trigger in [from, to] (RFC 3339, both included).
type BackfillRequest struct {
	// Trigger is the trigger's id; 0 takes the job's only trigger.
	Trigger int64  `json:"trigger,omitempty"`
	From    string `json:"from"`
	To      string `json:"to"`
	// MaxConcurrent bounds the backfill's runs at once (default 1: one after another).
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// Chunk is how many consecutive scheduled times one run covers (default 1).
	Chunk int `json:"chunk,omitempty"`
	// DryRun lists the runs without storing anything.
	DryRun bool `json:"dry_run,omitempty"`
}

// BackfillRun is one run of a backfill's plan: its data interval and the scheduled times it
// covers.
type BackfillRun struct {
	IntervalStart Time   `json:"interval_start"`
	IntervalEnd   Time   `json:"interval_end"`
	Times         []Time `json:"times"`
}

// Backfill is a backfill as the API shows it; a dry run's has ID 0 and its Plan.
type Backfill struct {
	ID    int64 `json:"id,omitempty"`
	JobID int64 `json:"job_id"`
	// Workflow names the workflow a backfill of its trigger job runs (POST
	// /workflows/{name}/backfills answers with it).
	Workflow      string        `json:"workflow,omitempty"`
	TriggerID     int64         `json:"trigger_id"`
	From          Time          `json:"from"`
	To            Time          `json:"to"`
	MaxConcurrent int           `json:"max_concurrent"`
	Chunk         int           `json:"chunk"`
	State         string        `json:"state,omitempty"`
	Total         int64         `json:"total"`
	Created       int64         `json:"created"`
	CreatedBy     string        `json:"created_by,omitempty"`
	CreatedAt     Time          `json:"created_at,omitzero"`
	Plan          []BackfillRun `json:"plan,omitempty"`
}

// RunRequest is the optional body of POST /jobs/{id}/run.
type RunRequest struct {
	// Params, when not empty, are given to the run's handler in place of the job's. A script
	// job takes none (its params are its script). A secret job's (params_secret) are stored
	// sealed like the job's, and the execution shows them as "***".
	Params string `json:"params,omitempty"`
}

// LogLine is one line of an execution's output.
type LogLine struct {
	Line    int64  `json:"line"`
	At      Time   `json:"at"`
	Message string `json:"message"`
}

// Node is a scheduler node of the cluster.
type Node struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	StartedAt Time   `json:"started_at"`
	LastSeen  Time   `json:"last_seen"`
	Leader    bool   `json:"leader"`
	// Self marks the node that answered the request (not its health: see Live).
	Self bool `json:"self"`
	// Live is false for a node that has missed its heartbeats for longer than the cluster
	// allows: it is counted dead, and its runs are recovered.
	Live bool `json:"live"`
	// Load is how the node that answered keeps up with its fires (set on Self only: a node
	// knows only its own).
	Load *NodeLoad `json:"load,omitempty"`
}

// NodeLoad is how a node keeps up with its fires; under overload it keeps firing, late, and
// says so here (the same figures as its metrics sundial_fire_late_seconds,
// sundial_fires_backlog and sundial_heartbeat_age_seconds).
type NodeLoad struct {
	// LateMs is how late past its scheduled time the last batch of fires it started was.
	LateMs int64 `json:"late_ms"`
	// Backlog counts the fires it acquired and holds, not started yet.
	Backlog int `json:"backlog"`
	// HeartbeatAgeMs is how long ago its last successful heartbeat was sent; -1 for none
	// (its fence lapses a node timeout after the last one).
	HeartbeatAgeMs int64 `json:"heartbeat_age_ms"`
}

// LoginRequest is the body of POST /auth/login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// The roles: admin (users, credentials, apps, settings, audit), operator (create, edit, run
// and pause the jobs of the apps in scope), viewer (read only, output included).
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// User is a user (GET /users/{id}), or the caller (GET /auth/me, POST /auth/login), whose
// role, scope and scripts are then those of the credential used.
type User struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
	// Scope lists the apps the user may act on; ["*"] is every app.
	Scope []string `json:"scope"`
	// Scripts allows jobs with script handlers (shell and the like).
	Scripts   bool `json:"scripts"`
	Disabled  bool `json:"disabled"`
	CreatedAt Time `json:"created_at"`
	UpdatedAt Time `json:"updated_at"`
	// Via says how this request authenticated: "token" or "session".
	Via string `json:"via,omitempty"`
}

// UserRequest is the body of POST /users.
type UserRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Role     string `json:"role"`
	// Scope is optional: every app when absent.
	Scope   []string `json:"scope,omitempty"`
	Scripts bool     `json:"scripts,omitempty"`
}

// UserUpdate is the body of PATCH /users/{id}: the fields present change.
type UserUpdate struct {
	Role     *string   `json:"role,omitempty"`
	Scope    *[]string `json:"scope,omitempty"`
	Scripts  *bool     `json:"scripts,omitempty"`
	Disabled *bool     `json:"disabled,omitempty"`
}

// PasswordReset is the answer of POST /users/{id}/reset-password: a one-time token the user
// redeems at POST /auth/reset before ExpiresAt.
type PasswordReset struct {
	Token     string `json:"token"`
	ExpiresAt Time   `json:"expires_at"`
}

// ResetRequest is the body of POST /auth/reset.
type ResetRequest struct {
	Token       string `json:"token"`
	NewPassword string `json:"new_password"`
}

// AuditEntry is one change in the audit log. Before and After are the target's JSON with its
// secrets redacted, absent where it did not exist.
type AuditEntry struct {
	ID         int64           `json:"id"`
	At         Time            `json:"at"`
	Actor      string          `json:"actor"`
	Source     string          `json:"source"`
	Action     string          `json:"action"`
	TargetKind string          `json:"target_kind"`
	Target     string          `json:"target"`
	App        string          `json:"app,omitempty"`
	Before     json.RawMessage `json:"before,omitempty"`
	After      json.RawMessage `json:"after,omitempty"`
}

// PasswordRequest is the body of POST /auth/password.
type PasswordRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// TokenRequest is the body of POST /tokens.
type TokenRequest struct {
	Name string `json:"name"`
	// Role, Scope and Scripts narrow the token below its user's (never above); absent, the
	// token has the user's role and scope, and scripts only for an admin.
	Role    string   `json:"role,omitempty"`
	Scope   []string `json:"scope,omitempty"`
	Scripts bool     `json:"scripts,omitempty"`
	// ExpiresAt (RFC 3339) is optional; a token without it works until it is deleted.
	ExpiresAt string `json:"expires_at,omitempty"`
}

// AppCredential is an app's executor credential (sundial app credential).
type AppCredential struct {
	App       string `json:"app"`
	CreatedAt Time   `json:"created_at"`
	RotatedAt Time   `json:"rotated_at,omitempty"`
	// Secret is what the app's executors present, only in the response that made it.
	Secret string `json:"secret,omitempty"`
}

// Token is an API token.
type Token struct {
	ID        int64    `json:"id"`
	UserID    int64    `json:"user_id"`
	Name      string   `json:"name"`
	Prefix    string   `json:"prefix"`
	Role      string   `json:"role,omitempty"`
	Scope     []string `json:"scope"`
	Scripts   bool     `json:"scripts"`
	CreatedAt Time     `json:"created_at"`
	ExpiresAt Time     `json:"expires_at"`
	// LastUsedAt is the token's last use, to the minute; absent if never used.
	LastUsedAt Time `json:"last_used_at"`
	// Token is the secret, present only in the response that created it.
	Token string `json:"token,omitempty"`
}

// AppRequest is the body of PUT /apps/{name}.
type AppRequest struct {
	Title       string   `json:"title"`
	AddressMode string   `json:"address_mode"`
	Addresses   []string `json:"addresses"`
	// Protocol is what the app's executors speak: sundial (the default) or xxl-job.
	Protocol string `json:"protocol,omitempty"`
	// ProtocolVersion is an xxl-job app's generation: 2.x, 3.3 or 3.5.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// XXLAccessToken sets an xxl-job app's access token (its executors'
	// xxl.job.accessToken); empty keeps the one set before. It is never returned.
	XXLAccessToken string `json:"xxl_access_token,omitempty"`
}

// App is an executor group: the executors that run a remote job's fires.
type App struct {
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	AddressMode string   `json:"address_mode"`
	Addresses   []string `json:"addresses"`
	// Protocol is sundial or xxl-job; ProtocolVersion the xxl-job generation.
	Protocol        string `json:"protocol"`
	ProtocolVersion string `json:"protocol_version,omitempty"`
	// XXLAccessTokenSet tells whether an xxl-job app's access token is set (the token itself
	// is never shown).
	XXLAccessTokenSet bool `json:"xxl_access_token_set,omitempty"`
	CreatedAt         Time `json:"created_at"`
	UpdatedAt         Time `json:"updated_at"`
	// Warnings, on the answers to reading and putting one app, tell what may not work as
	// meant, such as secret params sent to an address without TLS.
	Warnings []string `json:"warnings,omitempty"`
}

// Executor is a live executor instance of an app (GET /executors).
type Executor struct {
	App     string `json:"app"`
	Address string `json:"address"`
	// Instance is the id the executor process picked at start; Version what it runs (both
	// empty when it does not say).
	Instance     string   `json:"instance"`
	Version      string   `json:"version"`
	Handlers     []string `json:"handlers"`
	RegisteredAt Time     `json:"registered_at"`
	// LastSeen is its last heartbeat.
	LastSeen Time `json:"last_seen"`
	// Running counts the runs sent to it that have not ended.
	Running int `json:"running"`
}

// ReportRow counts the executions fired on one day (or, as totals, on all the days asked).
type ReportRow struct {
	Day       string `json:"day,omitempty"`
	Running   int64  `json:"running"`
	Succeeded int64  `json:"succeeded"`
	Failed    int64  `json:"failed"`
	Other     int64  `json:"other"`
	Total     int64  `json:"total"`
}

// Report is the daily report (GET /reports/daily): a row per day and the totals.
type Report struct {
	Items  []ReportRow `json:"items"`
	Totals ReportRow   `json:"totals"`
}

// Info is GET /info: which Sundial the answering node runs.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	NodeID    string `json:"node_id"`
}

// DefaultGroup is the group of a job or trigger created without one.
const DefaultGroup = "default"

// SplitJobKey reads a job's key as the CLI and the API take it: name in group, or, when group
// is empty, "GROUP/NAME" or a bare name in the default group.
func SplitJobKey(group, name string) (string, string) {
	if group == "" {
		if g, n, ok := strings.Cut(name, "/"); ok {
			return g, n
		}
		return DefaultGroup, name
	}
	return group, name
}

// TriggerNext is GET /triggers/{id}/next: a stored trigger's next fire times as the scheduler
// will fire them, with its calendar and its misfire policy applied, or (?after=) the times
// after a given instant.
type TriggerNext struct {
	TriggerID int64  `json:"trigger_id"`
	TimeZone  string `json:"time_zone"`
	// State is the trigger's state; a paused trigger's times are those it would have when
	// resumed now.
	State string `json:"state"`
	// Misfired is set when the pending fire is already later than the misfire threshold: the
	// times are those after the misfire policy.
	Misfired bool `json:"misfired"`
	// After is the instant asked for (?after=): then Fires are the times the trigger's
	// schedule and calendar give strictly after it, whatever its state; empty for a preview
	// from now.
	After string `json:"after,omitempty"`
	// Fires are RFC 3339 times with milliseconds in the trigger's zone.
	Fires []string `json:"fires"`
	// Due, for a trigger with jitter, is when each fire starts (its time plus its offset),
	// index by index with Fires; empty without jitter.
	Due []string `json:"due,omitempty"`
	// DST marks, index by index with Fires, the fires next to a DST change: "gap" (in the
	// hour after a spring-forward change, where fires of skipped local times land), "overlap"
	// (a local time that occurs twice), "" otherwise; empty when no fire is marked.
	DST []string `json:"dst,omitempty"`
	// Zones, for a trigger of several zones, is the zone of each fire, index by index with
	// Fires (each fire is written in its zone); empty for a trigger of one zone.
	Zones []string `json:"zones,omitempty"`
}

// FormatZoned writes t as the API writes a time in a zone: RFC 3339 with milliseconds and
// the zone's offset.
func FormatZoned(t time.Time) string { return t.Format(timeLayout) }
