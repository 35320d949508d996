package store

import "slices"

// TargetKind says how a fire reaches code.
type TargetKind string

// The dispatch target kinds.
const (
	// TargetLocal runs a handler registered in the scheduler's own process.
	TargetLocal TargetKind = "local"
	// TargetRemote sends the fire to an executor of an app (executor group).
	TargetRemote TargetKind = "remote"
)

// ConcurrencyPolicy says what happens when a job fires while an earlier fire still runs: its
// overlap policy. The stored values are internal/jobrun's Policy names, where each is
// explained; the engine applies them.
type ConcurrencyPolicy string

// The overlap policies as stored.
const (
	ConcurrencyAllow     ConcurrencyPolicy = "allow"
	ConcurrencySkip      ConcurrencyPolicy = "skip"
	ConcurrencyBufferOne ConcurrencyPolicy = "buffer_one"
	ConcurrencyBufferAll ConcurrencyPolicy = "buffer_all"
	ConcurrencyCancel    ConcurrencyPolicy = "cancel"
	ConcurrencyTerminate ConcurrencyPolicy = "terminate"
	// ConcurrencyAtMost runs up to Job.MaxConcurrent fires side by side.
	ConcurrencyAtMost ConcurrencyPolicy = "at_most"
)

// The policies' old names, kept for the code that names them so; their values are the new
// names (migration 00028 rewrote stored rows, and input still accepts the old names).
const (
	ConcurrencySerial  = ConcurrencyBufferAll
	ConcurrencyDiscard = ConcurrencySkip
	ConcurrencyReplace = ConcurrencyTerminate
)

// Job is what to run.
type Job struct {
	ID          int64
	Group       string
	Name        string
	Description string

	TargetKind TargetKind
	// Handler names the handler: registered in-process for TargetLocal, on the executor for
	// TargetRemote.
	Handler string
	// App is the executor group for TargetRemote; empty for TargetLocal.
	App string

	// Params is passed verbatim to the handler (XXL-JOB's executorParam). With ParamsSecret
	// it holds them sealed (package secret): only the engine opens them, to start a run.
	Params       string
	ParamsSecret bool
	// Data is the job's data map (Quartz's JobDataMap); it is stored as JSON, so values come
	// back as the types encoding/json decodes into an any.
	Data map[string]any

	Concurrency ConcurrencyPolicy
	// MaxConcurrent is the limit of ConcurrencyAtMost (1 to 1000); 0 for the other policies.
	MaxConcurrent int
	// PersistData stores the data a run returns back into Data (Quartz
	// @PersistJobDataAfterExecution).
	PersistData bool
	// RequestsRecovery re-fires an execution that was running on a node that died.
	RequestsRecovery bool

	TimeoutMs      int64
	MaxRetries     int
	RetryBackoffMs int64
	// DispatchTimeoutMs is how long a fire of a remote job that finds no executor of its app
	// online waits for one before it fails; 0 for the node's default (--executor-wait).
	DispatchTimeoutMs int64
	// Routing names the strategy that picks executor instances (first, round_robin, ...).
	Routing string
	// AlarmTargets are addresses (e-mail, webhook URL) told when a run fails; chat and
	// paging targets ("slack:...") are kept sealed (package alarm's SealTarget).
	AlarmTargets []string
	// AlarmPolicy says when the targets are told: the threshold, the silence window and
	// the recovery notice. The zero value tells them of every final failure.
	AlarmPolicy AlarmPolicy
	// ChildJobIDs are fired when a run succeeds.
	ChildJobIDs []int64
	Enabled     bool

	CreatedAt int64
	UpdatedAt int64
	// ScriptVersion is a script job's current script version (the one Params holds), 0 for
	// other jobs. ScriptVersionAdd sets it; JobInsert and JobUpdate ignore it.
	ScriptVersion int64
	// PausedBy, PauseNote and PausedAt say who paused the job, why and when; JobSetPause
	// sets them, JobInsert and JobUpdate ignore them.
	PausedBy  string
	PauseNote string
	PausedAt  int64
	// PauseAfterFailures, when not 0, pauses the job after that many consecutive final
	// failures; ConsecutiveFailures counts them (JobCountResult keeps it; JobInsert and
	// JobUpdate ignore it).
	PauseAfterFailures  int
	ConsecutiveFailures int
}

// PausedByFailures is the PausedBy of a job that paused itself by pause on failure
// (Job.PauseAfterFailures). Its PausedAt is the FinishedAt of the failure that paused it, so
// the alarm of that failure is told as the pause (package alarm, event job.paused).
const PausedByFailures = "sundial (pause on failure)"

// TriggerKind names a trigger's schedule kind; it matches schedule.Kind.
type TriggerKind string

// The trigger kinds.
const (
	TriggerCron             TriggerKind = "cron"
	TriggerSimple           TriggerKind = "simple"
	TriggerCalendarInterval TriggerKind = "calendar_interval"
	TriggerDailyInterval    TriggerKind = "daily_interval"
)

// TriggerState is a trigger's stored state.
type TriggerState string

// The trigger states.
const (
	// TriggerWaiting triggers fire at NextFireAt.
	TriggerWaiting TriggerState = "waiting"
	// TriggerPaused triggers keep their schedule but do not fire.
	TriggerPaused TriggerState = "paused"
	// TriggerComplete triggers will never fire again.
	TriggerComplete TriggerState = "complete"
	// TriggerError triggers could not be fired (ErrorMessage says why) and wait for a person.
	TriggerError TriggerState = "error"
)

// DefaultPriority is the priority of a trigger inserted with Priority 0.
const DefaultPriority = 5

// Trigger says when a job runs.
type Trigger struct {
	ID          int64
	JobID       int64
	Group       string
	Name        string
	Description string

	Kind TriggerKind
	// Spec is the kind-specific schedule as JSON. The engine owns its format; the store only
	// keeps it.
	Spec     string
	TimeZone string
	StartAt  int64
	EndAt    int64
	// CalendarName names the calendar excluding fire times; empty for none.
	CalendarName string
	// Priority orders triggers due at the same millisecond, higher first. Zero on insert
	// means DefaultPriority.
	Priority      int
	MisfirePolicy string
	// Params, when not empty, are given to the trigger's fires in place of the job's; sealed
	// (package secret) when the job's params are secret. Data is merged over the job's data for
	// each fire (Quartz's trigger JobDataMap). Both travel with the fire on its execution.
	Params string
	Data   map[string]any
	// JitterMs is the largest delay the engine adds to a fire's start (0: none); the fire's
	// key stays its scheduled time (schedule.JitterOffset). DSTPolicy says how local times a
	// DST change repeats or skips fire (schedule.ParseDSTPolicy; "" is Quartz-exact).
	JitterMs  int64
	DSTPolicy string
	// CatchUpWindow (ms) is how late a fire may be before the misfire policy applies; 0 means
	// the cluster's misfire threshold. CatchUp is the catch-up mode: CatchUpCoalesce, or ""
	// for the misfire policy alone.
	CatchUpWindow int64
	CatchUp       string
	// Zones, on a trigger of several zones, lists them all, TimeZone first; empty for a
	// trigger of one zone. Each further zone is stored as a row of its own (a zone row) whose
	// ZoneOf is this trigger's ID: it has its own next fire and its own fire key (its ID and
	// the scheduled time), so two zones firing at the same instant are two fires. Lists and
	// the API show the trigger alone (TriggerFilter.WithZoneRows); pausing, resuming and
	// deleting it by id take its zone rows along.
	Zones  []string
	ZoneOf int64

	State        TriggerState
	ErrorMessage string
	NextFireAt   int64
	PrevFireAt   int64
	TimesFired   int64
	// RunLimit, when not 0, is the TimesFired at which the trigger completes: its remaining
	// runs are RunLimit - TimesFired, consumed in the transaction that acquires each fire (the
	// one that advances TimesFired) and given back with a fire handed back unrun.
	RunLimit int64
	// Version is bumped by every write, so TriggerUpdate can refuse a stale copy.
	Version int64

	CreatedAt int64
	UpdatedAt int64
}

// Calendar is a named exclusion calendar. The engine owns Spec's format.
type Calendar struct {
	Name        string
	Description string
	Spec        string
	// Base names the calendar this one is chained onto; empty for none.
	Base string
	// Zone is the IANA zone the calendar's exclusions are read in; empty: the zone of the
	// trigger it modifies.
	Zone      string
	UpdatedAt int64
}

// ExecutionCause says why an execution exists.
type ExecutionCause string

// The execution causes.
const (
	CauseSchedule ExecutionCause = "schedule"
	CauseManual   ExecutionCause = "manual"
	CauseAPI      ExecutionCause = "api"
	CauseRetry    ExecutionCause = "retry"
	CauseMisfire  ExecutionCause = "misfire"
	CauseRecovery ExecutionCause = "recovery"
	CauseChild    ExecutionCause = "child"
	// CauseBackfill runs were made by a backfill (Execution.BackfillID).
	CauseBackfill ExecutionCause = "backfill"
	// CauseWorkflow executions run a node of a workflow run (Execution.WorkflowNode).
	CauseWorkflow ExecutionCause = "workflow"
)

// CatchUpCoalesce is the trigger catch-up mode that makes the fires missed past the catch-up
// window one run covering the whole gap.
const CatchUpCoalesce = "coalesce"

// ExecutionCauses are all the causes, in the order lists show them.
var ExecutionCauses = []ExecutionCause{CauseSchedule, CauseManual, CauseAPI, CauseRetry, CauseMisfire, CauseRecovery, CauseChild, CauseBackfill, CauseWorkflow}

// Words are xs as plain strings: the words a form offers and an error message lists.
func Words[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// Valid reports whether c is one of ExecutionCauses.
func (c ExecutionCause) Valid() bool { return slices.Contains(ExecutionCauses, c) }

// ExecutionState is where an execution is in its life.
type ExecutionState string

// The execution states. Pending, acquired and running are live; the rest are terminal.
const (
	// ExecPending executions wait for ScheduledAt and for a node to acquire them.
	ExecPending ExecutionState = "pending"
	// ExecAcquired executions are owned by Node, which will fire them at ScheduledAt.
	ExecAcquired ExecutionState = "acquired"
	// ExecRunning executions have been handed to a handler.
	ExecRunning   ExecutionState = "running"
	ExecSucceeded ExecutionState = "succeeded"
	ExecFailed    ExecutionState = "failed"
	ExecTimedOut  ExecutionState = "timed_out"
	// ExecLost executions were running on a node or executor that went away.
	ExecLost ExecutionState = "lost"
	// ExecSkipped executions were not run (for example by ConcurrencyDiscard).
	ExecSkipped  ExecutionState = "skipped"
	ExecCanceled ExecutionState = "canceled"
)

// ExecutionStates are all the states, live first, in the order lists show them.
var ExecutionStates = []ExecutionState{ExecPending, ExecAcquired, ExecRunning, ExecSucceeded, ExecFailed,
	ExecTimedOut, ExecLost, ExecSkipped, ExecCanceled}

// Valid reports whether s is one of ExecutionStates.
func (s ExecutionState) Valid() bool { return slices.Contains(ExecutionStates, s) }

// Terminal reports whether no further transition leaves s.
func (s ExecutionState) Terminal() bool {
	switch s {
	case ExecPending, ExecAcquired, ExecRunning:
		return false
	}
	return true
}

// AlarmState tracks the alarm for a failed execution.
type AlarmState string

// The alarm states. An alarm moves none → pending (in the transaction that writes a final
// failure) → sending (claimed by one alarm sweep, compare-and-set) → sent or failed.
const (
	AlarmNone    AlarmState = "none"
	AlarmPending AlarmState = "pending"
	// AlarmSending alarms are being delivered by the node that claimed them. One left here
	// for long belongs to a node that died mid-delivery: whether its targets were told is
	// unknown, and it is claimed again and sent again (at least once; see alarm.Sender).
	AlarmSending AlarmState = "sending"
	AlarmSent    AlarmState = "sent"
	AlarmFailed  AlarmState = "failed"
)

// AlarmStates are all the alarm states, in their order.
var AlarmStates = []AlarmState{AlarmNone, AlarmPending, AlarmSending, AlarmSent, AlarmFailed}

// Valid reports whether a is one of AlarmStates.
func (a AlarmState) Valid() bool { return slices.Contains(AlarmStates, a) }

// Execution is one fire of a job: the in-flight record while it is live and the history
// afterwards.
type Execution struct {
	ID    int64
	JobID int64
	// TriggerID is 0 for fires that no trigger caused (manual, API, child).
	TriggerID int64
	// ScheduledAt is when the fire is due. (TriggerID, ScheduledAt, Attempt, ShardIndex) is
	// unique, which is what makes a duplicate fire impossible: a fire is shard 0, and a
	// sharding-broadcast adds one execution per further shard.
	ScheduledAt int64
	// FiredAt is when a node moved it to running.
	FiredAt int64
	Cause   ExecutionCause
	// Attempt counts from 0; a retry is a new execution with Attempt+1.
	Attempt int
	// Node is the scheduler node that owns an acquired or running execution, and
	// Incarnation the life of that node that acquired it (see Owner).
	Node            string
	Incarnation     string
	ExecutorAddress string
	// ExecutorApp is the app whose executor the run was handed to, recorded at dispatch: its
	// reports are checked against it, so a run outlives the deletion of its job.
	ExecutorApp string
	ShardIndex  int
	ShardTotal  int
	State       ExecutionState

	// TriggerCode is the outcome of handing the run over (XXL-JOB's trigger code):
	// DispatchAccepted once an executor accepted it.
	TriggerCode int
	TriggerMsg  string
	HandleCode  int
	HandleMsg   string
	StartedAt   int64
	FinishedAt  int64
	AlarmState  AlarmState
	// Data is the data of the fire's trigger (Trigger.Data), carried from acquisition so
	// that the run, its retries and a recovery re-run merge the same over the job's; nil for
	// none.
	Data map[string]any
	// ScriptVersion is, for a script job, the version of its script that was current when the
	// run was marked running (the job's ScriptVersion then), carried to the history; 0 else.
	ScriptVersion int64
	// Params, when not empty, are given to the handler in place of the job's (a run-now with
	// parameters); its retries keep them.
	Params string
	// OutputLost counts the run's output lines that never reached the store (the executor
	// gave up sending them): its output is cut when it is not 0.
	OutputLost int64
	// IntervalStart and IntervalEnd (Unix ms) are the run's data interval: the trigger's
	// scheduled time before this one and this one, or, for a coalesced catch-up, the start of
	// the first missed interval and the last missed time. Both 0 for runs no schedule made.
	IntervalStart int64
	IntervalEnd   int64
	// BackfillID is the backfill that made the run; 0 for none.
	BackfillID int64
	// WorkflowNode is the id of the workflow node (WorkflowNode.ID) this run executes, 0 for a
	// run outside workflows: the one field the completion path tests before it advances a
	// workflow run, so ordinary fires cost no query. Retries and recovery re-runs keep it.
	WorkflowNode int64
	// FireZone is the IANA zone of the trigger row that fired the run (a trigger of several
	// zones fires once per zone); "" for runs no schedule made. Retries and recovery re-runs
	// keep it.
	FireZone string
}

// BackfillState is where a backfill is in its life.
type BackfillState string

// The backfill states.
const (
	BackfillRunning  BackfillState = "running"
	BackfillDone     BackfillState = "done"
	BackfillCanceled BackfillState = "canceled"
)

// Backfill runs a job for every scheduled time of its trigger in [FromAt, ToAt] (Unix ms).
type Backfill struct {
	ID        int64
	JobID     int64
	TriggerID int64
	FromAt    int64
	ToAt      int64
	// MaxConcurrent bounds the backfill's live runs (1: one after the other).
	MaxConcurrent int
	// Chunk is how many scheduled times one run covers (1: a run per time).
	Chunk int
	State BackfillState
	// CursorAt is the last scheduled time given a run so far; 0 before the first.
	CursorAt int64
	// Total is how many scheduled times the range has; Created how many have a run.
	Total     int64
	Created   int64
	CreatedBy string
	CreatedAt int64
	UpdatedAt int64
}

// ScriptVersionsKept is how many script versions the store keeps per job.
const ScriptVersionsKept = 30

// ScriptVersion is one save of a script job's script (its Params) with the saver's note.
type ScriptVersion struct {
	ID        int64
	JobID     int64
	Version   int64
	Script    string
	Note      string
	CreatedAt int64
}

// ExecutionLines is one execution's output lines (ExecutionLogsAppend).
type ExecutionLines struct {
	ExecutionID int64
	Lines       []LogLine
}

// LogLine is one line of an execution's output.
type LogLine struct {
	// Line numbers count from 1 per execution and are chosen by the writer, so a chunk that
	// is sent twice is stored once.
	Line    int64
	At      int64
	Message string
}

// Node is a scheduler node, alive while it heartbeats.
type Node struct {
	ID string
	// Incarnation is the life of the node that registered the row (see Owner).
	Incarnation string
	Name        string
	StartedAt   int64
	LastSeen    int64
}

// DispatchAccepted is the TriggerCode of a run an executor accepted.
const DispatchAccepted = 200

// Owner is one life of a scheduler node: its id, which stays the same across restarts, and
// the incarnation one start chose. Every change a node makes to its executions is a
// compare-and-set on its Owner, so the work of a life the cluster declared dead — a node
// restarted under the same id, or one that froze past the node timeout — can neither be
// stranded nor run by the life that lost it.
type Owner struct {
	Node        string
	Incarnation string
}

// OwnerOf returns the owner an execution names.
func OwnerOf(x *Execution) Owner { return Owner{Node: x.Node, Incarnation: x.Incarnation} }

// Owner returns the life of the node the row names.
func (n *Node) Owner() Owner { return Owner{Node: n.ID, Incarnation: n.Incarnation} }

// Lease is a named, expiring claim held by one holder: the leader lease and any other duty
// only one node may run.
type Lease struct {
	Name   string
	Holder string
	// Token grows every time the lease changes hands, so a holder can fence its writes.
	Token     int64
	ExpiresAt int64
}

// Role is what a user or token may do; the server's policy (server/policy.go) says what
// each one allows.
type Role string

// The roles, from the most to the least privileged.
const (
	RoleAdmin    Role = "admin"
	RoleOperator Role = "operator"
	RoleViewer   Role = "viewer"
)

// ScopeAll is the scope that covers every app.
const ScopeAll = "*"

// User is a person who signs in to the API or the console.
type User struct {
	ID   int64
	Name string
	// PasswordHash is a bcrypt hash; the store never sees a password.
	PasswordHash string
	Role         Role
	// Scope is the apps the user may act on: app names separated by commas, or ScopeAll.
	Scope string
	// Scripts allows jobs with script handlers (shell and the like); only admins grant it.
	Scripts  bool
	Disabled bool
	// ResetHash is the SHA-256 of a one-time password reset token, valid until
	// ResetExpiresAt; empty when none is outstanding.
	ResetHash      string
	ResetExpiresAt int64
	// SSOSubject ties a user made by a single sign-on login to the identity provider's
	// "issuer|subject"; empty for local users. It is set when the user is made, never changed.
	SSOSubject string
	CreatedAt  int64
	UpdatedAt  int64
}

// APIToken is a bearer token for the API. Only a hash of the secret is stored, so a leaked
// database does not leak working tokens.
type APIToken struct {
	ID     int64
	UserID int64
	Name   string
	// Hash is the hex SHA-256 of the secret; unique.
	Hash string
	// Prefix is the secret's first characters, to tell tokens apart in a list.
	Prefix string
	// Role, Scope and Scripts bound what the token may do; the server grants the lesser of
	// them and its user's. An empty Role is the user's.
	Role      Role
	Scope     string
	Scripts   bool
	CreatedAt int64
	// ExpiresAt is 0 for a token that does not expire.
	ExpiresAt int64
	// LastUsedAt is when the token last authenticated a request (0: never), to the minute.
	LastUsedAt int64
}

// Session is a signed-in console session. Like a token, only the hash of its secret is
// stored; the secret lives in the browser's cookie.
type Session struct {
	Hash      string
	UserID    int64
	CreatedAt int64
	ExpiresAt int64
}

// ReportDay counts the executions of one UTC day (XXL-JOB's xxl_job_log_report row): those
// fired that day, and the live ones not fired yet by their scheduled time.
type ReportDay struct {
	// Day is the UTC date, YYYY-MM-DD.
	Day string
	// JobID is the job counted, or 0 for a sum over every job.
	JobID int64
	// Running counts pending, acquired and running executions.
	Running   int64
	Succeeded int64
	// Failed counts failed, timed-out and lost executions.
	Failed int64
	// Other counts skipped and canceled executions.
	Other int64
}

// AuditEntry is one change in the audit log: who did what to which target, from where, and
// the target before and after as JSON with its secrets redacted ("" where it did not exist).
type AuditEntry struct {
	ID int64
	At int64
	// Actor is the user name (or "token:<id>/<user>"), empty for the system itself.
	Actor string
	// Source is the client's network address.
	Source string
	// Action is what happened, "<kind>.<verb>": job.create, user.update, auth.login_failed.
	Action     string
	TargetKind string
	Target     string
	// App is the app of the target, for scoped readers.
	App    string
	Before string
	After  string
}

// AuditFilter selects audit entries for AuditList, newest first.
type AuditFilter struct {
	Actor      string
	Action     string
	TargetKind string
	Target     string
	// From and To bound At (inclusive, exclusive); 0 for no bound.
	From int64
	To   int64
	// BeforeID continues a listing below the last ID seen; 0 from the newest.
	BeforeID int64
	Limit    int
}

// AlarmPolicy is when a job's alarm targets are told. Package alarm applies it.
type AlarmPolicy struct {
	// Threshold is how many failures raise an alarm: in a row, or within WindowMs when it
	// is set. 0 or 1: every final failure.
	Threshold int `json:"threshold,omitempty"`
	// WindowMs counts Threshold failures within this many milliseconds instead of in a row.
	WindowMs int64 `json:"window_ms,omitempty"`
	// SilenceMs is how long after an alarm no other alarm of the job is sent.
	SilenceMs int64 `json:"silence_ms,omitempty"`
	// Recovery tells the targets when the job succeeds again after an alarm.
	Recovery bool `json:"recovery,omitempty"`
}

// IsZero reports whether p is the default: every final failure alarms, nothing else does.
func (p AlarmPolicy) IsZero() bool { return p == AlarmPolicy{} || p == AlarmPolicy{Threshold: 1} }

// AlarmStateRow is a job's alarm bookkeeping (table job_alarms): what the policy has counted and
// decided so far. It is written with a compare-and-set on Version, so the node that
// delivers alarms after a leader change or a restart counts on from where the last stopped.
type AlarmStateRow struct {
	JobID int64
	// Failures counts failures in a row (a policy without a window).
	Failures int
	// FailedAt are the times (Unix ms) of the latest failures, for a policy with a window.
	FailedAt []int64
	// Open is an incident: an alarm was sent and no success followed yet.
	Open bool
	// LastAlarmAt is when the last alarm was sent (Unix ms), for the silence window.
	LastAlarmAt int64
	// Decided are the decisions for the latest executions, so an alarm delivered again
	// (its node died mid-delivery) gets the same decision and is not counted twice.
	Decided []AlarmDecided
	// Version is 0 for a job with no row yet.
	Version int64
}

// AlarmDecided is the decision taken for one execution.
type AlarmDecided struct {
	ExecutionID int64  `json:"x"`
	Decision    string `json:"d"`
}

// Workflow is a named DAG of nodes that reference jobs (see package workflow). Graph is the
// nodes and edges as one JSON document (workflow.Graph), validated before it is stored.
type Workflow struct {
	ID          int64
	Name        string
	Description string
	Graph       string
	// Params are the default parameters of a run (a JSON object, "" for none).
	Params string
	// Concurrency and MaxConcurrent are the workflow's overlap policy, as a job's (a
	// jobrun.Policy name, "" for allow): what a run does that starts while earlier ones run.
	Concurrency   string
	MaxConcurrent int
	Version       int64
	CreatedAt     int64
	UpdatedAt     int64
}

// WorkflowRun is one run of a workflow. It keeps the graph it started with, so an edit of
// the workflow changes later runs only (the jobs its nodes reference are read when each node
// starts).
type WorkflowRun struct {
	ID         int64
	WorkflowID int64
	// State is running, succeeded, failed or canceled (workflow.RunState).
	State  string
	Graph  string
	Params string
	Cause  ExecutionCause
	// Message says why a run failed or who canceled it.
	Message    string
	CreatedAt  int64
	FinishedAt int64
	// Version is the workflow's version the run started with (Graph is that version's).
	Version int64
	// DeadlineAt (Unix ms) is when the run times out, 0 for never.
	DeadlineAt int64
	// ParentNode is the workflow node (WorkflowNode.ID) whose sub-workflow this run is, 0 for
	// a run of its own.
	ParentNode int64
	// IntervalStart and IntervalEnd (Unix ms) are the data interval of the fire that started
	// the run (its trigger job's, or a backfill's), 0 for a run started by hand; BackfillID
	// the backfill that made it. Each node's execution is given them.
	IntervalStart int64
	IntervalEnd   int64
	BackfillID    int64
}

// WorkflowNode is the state of one node in one run: (RunID, Node) is unique, so a node is
// started, and its execution created, exactly once per run.
type WorkflowNode struct {
	ID    int64
	RunID int64
	Node  string
	// State is a workflow.State.
	State string
	// ExecutionID is the node's newest execution (a retry's once retried), 0 for a node
	// that ran none (decision, skipped, canceled).
	ExecutionID int64
	// Input is what the node's handler is given: {"params": ..., "parents": {name: result}}.
	Input string
	// Result is the JSON result its run returned (or a decision's outcome), "" for none.
	Result    string
	Message   string
	UpdatedAt int64
	// ChildRun is the run a sub-workflow node started (its newest, once retried), 0 for
	// other nodes; that run's ParentNode is this node's ID.
	ChildRun int64
}

// MaxResultBytes is the largest JSON result a run may return; a larger one fails the run.
const MaxResultBytes = 64 << 10

// HistoryPartition is one day partition of the history (PostgreSQL).
type HistoryPartition struct {
	// Day is the UTC date of the scheduled times it holds, YYYY-MM-DD.
	Day string
	// Name is the partition's table.
	Name string
	// From and To bound its scheduled times, in Unix milliseconds: From <= scheduled_at < To.
	From, To int64
}
