// Package sundial embeds the Sundial scheduler in a Go program, as Quartz is embedded in a
// Java one: open a store, register named handlers, schedule jobs with one or more triggers,
// and start the node. Several programs (or `sundial server` nodes) sharing one PostgreSQL or
// MySQL database form a cluster that fires every trigger exactly once.
//
// A handler runs with a context that carries its execution (see ExecutionFrom) and a logger
// whose lines are stored with the execution (see Logger).
package sundial

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/internal/setting"
	"github.com/sundial-scheduler/sundial/maintenance"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// Config configures a Scheduler. Only Store is required.
type Config struct {
	// Store is the database the node uses; open one with sqlstore.Open and migrate it.
	Store store.Store
	// NodeID names this node in the cluster. Default: hostname-pid-random.
	NodeID string
	// Logger receives the scheduler's own logs. Default: slog.Default().
	Logger *slog.Logger
	// Clock is the time source. Default: the system clock.
	Clock clock.Clock
	// MisfireThreshold is how late a fire may be before its trigger's misfire policy applies.
	// Default 60 s.
	MisfireThreshold time.Duration
	// MaxRunning bounds the handlers running at once on this node. Default 10,000.
	MaxRunning int
	// HeartbeatInterval is how often the node proves it is alive. Default 2 s; a node silent
	// for three intervals is declared dead and its work recovered.
	HeartbeatInterval time.Duration
	// DrainTimeout is how long Stop waits for running handlers. Default 30 s.
	DrainTimeout time.Duration
	// Secrets seals the params of jobs marked secret (Job.ParamsSecret) and opens them for
	// their runs. Without it a secret job is refused (FieldError "params_secret").
	Secrets *secret.Keyring
	// MinInterval is the shortest time allowed between two fires of one trigger: a trigger
	// that would fire more often is refused (FieldError "schedule"). 0: no limit.
	MinInterval time.Duration
	// Dispatcher, when set, is given the in-process dispatcher (registered handlers) and
	// returns the one the engine uses: a server wraps it to send remote jobs to executors
	// (dispatch.ByTarget).
	Dispatcher func(local engine.Dispatcher) engine.Dispatcher
	// MapReduce tunes the node's runner of sub-tasks (RegisterMapReduce).
	MapReduce MapConfig
	// Engine tunes the scheduling loop further (batch size, look-ahead, poll interval). The
	// fields above are shorthands for its fields of the same names: give each setting in
	// either place, since two different values are an error. Its Dispatcher is the
	// scheduler's own (see Dispatcher above).
	Engine engine.Config
}

// merge sets *eng to the one value of the setting given as Config.<name> (short) or
// Config.Engine.<name> (*eng), and adds a disagreement to errs.
func merge[T comparable](errs *[]error, name string, short T, eng *T) {
	v, err := setting.One("Config."+name, short, "Config.Engine."+name, *eng)
	*eng = v
	*errs = append(*errs, err)
}

// Handler is the code a job runs. Returning an error fails the execution (and retries it
// when the job allows retries). The context is canceled when the job's timeout passes or
// the node stops.
type Handler func(ctx context.Context) error

// Scheduler is one embedded scheduler node.
type Scheduler struct {
	store  store.Store
	engine *engine.Engine
	clock  clock.Clock
	// minInterval is Config.MinInterval.
	minInterval time.Duration
	// secrets seals secret params (Config.Secrets).
	secrets *secret.Keyring
	// maint runs the leader's duties while the node leads.
	maint *maintenance.Manager

	mu         sync.RWMutex
	handlers   map[string]Handler
	mapReduces map[string]MapReduce
	// mapRun runs sub-tasks and reduces on this node (mapreduce.go); mapCfg is its config.
	mapRun *mapRunner
	mapCfg MapConfig
}

// New returns a stopped scheduler.
func New(cfg Config) (*Scheduler, error) {
	ec, err := cfg.engineConfig()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{store: ec.Store, handlers: map[string]Handler{}, clock: ec.Clock, minInterval: cfg.MinInterval,
		secrets: ec.Secrets, mapReduces: map[string]MapReduce{}, mapCfg: cfg.MapReduce.withDefaults()}
	// A workflow's trigger job runs nothing itself: the engine starts the workflow's run
	// when the job's fire is recorded succeeded.
	s.handlers[engine.WorkflowHandler] = func(context.Context) error { return nil }
	if s.clock == nil {
		s.clock = clock.Real{}
		ec.Clock = s.clock
	}
	ec.Dispatcher = localDispatcher{s}
	if cfg.Dispatcher != nil {
		ec.Dispatcher = cfg.Dispatcher(ec.Dispatcher)
	}
	e, err := engine.New(ec)
	if err != nil {
		return nil, err
	}
	s.engine = e
	logger := ec.Logger
	if logger == nil {
		logger = slog.Default()
	}
	s.mapRun = &mapRunner{s: s, log: logger}
	s.mapRun.run.Init()
	s.maint = maintenance.NewManager(e.Leadership(), ec.Logger, maintenance.NodeRecovery(e, s.clock, ec.Logger),
		maintenance.WorkflowTimeouts(e, s.clock, ec.Logger))
	return s, nil
}

// engineConfig merges the shorthand fields into Engine: each setting has one value, and
// one given in both places with different values is an error rather than a silent choice.
func (cfg Config) engineConfig() (engine.Config, error) {
	ec := cfg.Engine
	if ec.Dispatcher != nil {
		return ec, errors.New("sundial: Config.Engine.Dispatcher: the scheduler runs its registered handlers; " +
			"wrap them with Config.Dispatcher instead")
	}
	var errs []error
	merge(&errs, "Store", cfg.Store, &ec.Store)
	merge(&errs, "NodeID", cfg.NodeID, &ec.NodeID)
	merge(&errs, "Logger", cfg.Logger, &ec.Logger)
	merge(&errs, "Clock", cfg.Clock, &ec.Clock)
	merge(&errs, "MisfireThreshold", cfg.MisfireThreshold, &ec.MisfireThreshold)
	merge(&errs, "MaxRunning", cfg.MaxRunning, &ec.MaxRunning)
	merge(&errs, "HeartbeatInterval", cfg.HeartbeatInterval, &ec.HeartbeatInterval)
	merge(&errs, "DrainTimeout", cfg.DrainTimeout, &ec.DrainTimeout)
	merge(&errs, "Secrets", cfg.Secrets, &ec.Secrets)
	if err := errors.Join(errs...); err != nil {
		return ec, fmt.Errorf("sundial: %w", err)
	}
	if ec.Store == nil {
		return ec, errors.New("sundial: Config.Store is required")
	}
	return ec, nil
}

// Register makes h the handler of jobs whose Handler is name. Register handlers before Start;
// a fire of a job whose handler is not registered on the node that fires it fails.
func (s *Scheduler) Register(name string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[name] = h
}

// Start starts the node; it returns once the node is running.
func (s *Scheduler) Start(ctx context.Context) error {
	if err := s.engine.Start(ctx); err != nil {
		return err
	}
	s.startMapRunner()
	return s.maint.Start(ctx)
}

// Stop stops taking work, waits for running handlers (up to DrainTimeout or ctx) and leaves
// the cluster. It is idempotent.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.maint.Stop()
	s.mapRun.stop(ctx)
	return s.engine.Stop(ctx)
}

// Maintenance returns the manager of the leader's duties (dead-node recovery, and what a
// server adds), to add services before Start.
func (s *Scheduler) Maintenance() *maintenance.Manager { return s.maint }

// Engine returns the node's engine, for its statistics and leadership state.
func (s *Scheduler) Engine() *engine.Engine { return s.engine }

// Clock returns the scheduler's time source.
func (s *Scheduler) Clock() clock.Clock { return s.clock }

// Store returns the scheduler's store.
func (s *Scheduler) Store() store.Store { return s.store }

// Concurrency says what happens when a job fires while an earlier fire still runs: its
// overlap policy (docs/policies.md, "Overlap").
type Concurrency = store.ConcurrencyPolicy

// The overlap policies.
const (
	// Allow runs fires side by side.
	Allow = store.ConcurrencyAllow
	// Skip drops a fire while one runs.
	Skip = store.ConcurrencySkip
	// BufferOne runs a fire once the running one ends; of fires waiting at once only the
	// newest is kept, the others are recorded skipped.
	BufferOne = store.ConcurrencyBufferOne
	// BufferAll queues fires in order behind the running one.
	BufferAll = store.ConcurrencyBufferAll
	// Cancel asks the running fire to stop (its context is canceled) and runs the new one
	// once it has ended; only the newest waiting fire is kept.
	Cancel = store.ConcurrencyCancel
	// Terminate cancels the running fire and runs the new one at once.
	Terminate = store.ConcurrencyTerminate
	// AtMost runs up to Job.MaxConcurrent fires side by side, across the cluster, and queues
	// the rest as BufferAll.
	AtMost = store.ConcurrencyAtMost
)

// The policies' old names; a job given one stores the policy it names.
const (
	Serial  = BufferAll
	Discard = Skip
	Replace = Terminate
)

// Job describes what to run.
type Job struct {
	// Group and Name identify the job; the pair is unique. Group defaults to "default".
	Group, Name string
	Description string
	// Handler names the handler that runs the job: registered in this process, or, for a
	// remote job, on the App's executors.
	Handler string
	// App makes the job remote: its fires run on the executors of this app (executor
	// group), picked by Routing. Empty: the job runs in-process.
	App string
	// Routing is the strategy that picks the app's executor(s): first (default), last,
	// round_robin, random, consistent_hash, least_frequently_used, least_recently_used,
	// failover, busy_over or sharding_broadcast.
	Routing string
	// Params is handed to the handler verbatim. For the script handler (ScriptHandler) it is
	// the script, and each save that changes it records a version (ScriptNote).
	Params string
	// ParamsSecret stores Params sealed with Config.Secrets' primary key: the API, the CLI,
	// the console and the audit log show them as "***" (secret.Mask), and only runs get them
	// in clear. On UpdateJob, Params "***" keeps the stored secret. A script cannot be secret.
	ParamsSecret bool
	// ScriptNote is the note of the script version this save records; it is not stored on
	// the job. Default: "created" or "edited".
	ScriptNote string
	// Data is the job's data map; the handler sees a copy and, with PersistData, its changes
	// are stored after a successful run.
	Data        map[string]any
	Concurrency Concurrency // default Allow; the old names serial, discard, replace are read as buffer_all, skip, terminate
	// MaxConcurrent is the limit of AtMost, 1 to 1000 (FieldError max_concurrent); 0 else.
	MaxConcurrent int
	// PauseAfterFailures, when not 0, pauses the job (with a note saying why) once this many
	// of its runs in a row failed for good, 1 to 1000 (FieldError pause_after_failures).
	PauseAfterFailures int
	PersistData        bool
	// RequestsRecovery re-runs an execution that was running on a node that died.
	RequestsRecovery bool
	// Timeout cancels the handler's context after this long; 0 means no timeout.
	Timeout time.Duration
	// MaxRetries re-runs a failed execution up to this many times, waiting RetryBackoff
	// before the first retry and twice as long before each further one.
	MaxRetries   int
	RetryBackoff time.Duration
	// DispatchTimeout is how long a fire of a remote job (one with an App) that finds no
	// executor of its app online waits for one before it fails: its executors restart, or
	// their heartbeats were not recorded while the database was away. 0 waits the node's
	// default (a server's --executor-wait); at most MaxDispatchTimeout.
	DispatchTimeout time.Duration
	// AlarmTargets are told when a run fails for good (after its last retry): e-mail
	// addresses ("ops@example.com" or "mailto:ops@example.com"), webhook URLs (http://,
	// https://), and chat or paging services ("slack:URL", "teams:URL",
	// "dingtalk:URL#secret=SEC...", "lark:URL#secret=...", "wecom:URL",
	// "pagerduty:ROUTING_KEY"); a bad one is refused (FieldError alarm_targets[i]). The
	// services' targets carry secrets: they are stored sealed with Config.Secrets (which
	// they need) and shown as "slack:***"; on UpdateJob "slack:***" keeps the stored one.
	// A sundial server delivers them; an embedding program only records them.
	AlarmTargets []string
	// AlarmPolicy says when AlarmTargets are told (threshold, silence, recovery notice);
	// the zero value tells them of every final failure.
	AlarmPolicy AlarmPolicy
	// ChildJobIDs are the jobs fired when a run of this one succeeds. Each must be an
	// existing job other than this one (FieldError child_job_ids[i]) that the caller may run
	// (WithMayRun).
	ChildJobIDs []int64
}

// Trigger describes when a job runs.
type Trigger struct {
	// Group and Name identify the trigger; the pair is unique. In ScheduleJob, Group defaults
	// to the job's group and Name to the job's name with "#N" for the N-th trigger; in
	// AddTrigger, Group defaults to "default".
	Group, Name string
	// Schedule is the kind of trigger: *schedule.Cron (see Cron), schedule.Simple,
	// schedule.CalendarInterval or schedule.DailyInterval.
	Schedule schedule.Schedule
	// TimeZone is the zone of the schedule and its calendar (IANA name). Default: the zone
	// the schedule was built with (see Cron), else "UTC".
	TimeZone string
	// Zones, when it lists more than one zone, makes the trigger fire at its schedule's times
	// in each (at most MaxZones, each once; TimeZone empty or the first): every fire carries
	// its zone (Execution.FireZone), and the same instant in two zones is two fires. Each
	// zone after the first is stored as a zone row of its own (store.Trigger.Zones).
	Zones []string
	// Start is when the trigger may first fire; the zero value means now. End (optional) is
	// the last instant it may fire.
	Start, End time.Time
	// Calendar names a stored exclusion calendar (see PutCalendar).
	Calendar string
	// Priority orders fires due at the same millisecond, highest first. Default 5.
	Priority int
	// Misfire is applied when a fire is late by more than the misfire threshold.
	// Default schedule.MisfireSmart.
	Misfire schedule.MisfirePolicy
	// Description says what the trigger is for.
	Description string
	// Params, when set, are given to this trigger's fires in place of the job's (stored sealed
	// when the job's are secret; a script job takes none). Data is merged over the job's data
	// for each of its fires, key by key, as Quartz merges a trigger's JobDataMap; a persisting
	// run stores its data into the job without the trigger's keys.
	Params string
	Data   map[string]any
	// Jitter spreads the trigger's fires: each starts up to Jitter after its scheduled time,
	// by an offset derived from the trigger and the scheduled time (schedule.JitterOffset),
	// while the fire keeps its scheduled time as its key. At most schedule.MaxJitter.
	Jitter time.Duration
	// DST says how local times a daylight-saving change repeats or skips fire. Default
	// schedule.DSTQuartz (exactly as Quartz); not for a simple schedule.
	DST schedule.DSTPolicy
	// CatchUpWindow is how late a fire may be before the misfire policy applies; 0 means the
	// cluster's MisfireThreshold, so a trigger without one behaves as Quartz's.
	CatchUpWindow time.Duration
	// CatchUp "coalesce" makes the fires missed past the catch-up window one run, now, whose
	// data interval covers the whole gap (see Execution.IntervalStart); "" leaves them to
	// the misfire policy.
	CatchUp string
	// RemainingRuns, when not 0, is how many more times the trigger fires: each fire consumes
	// one in the transaction that takes it, and the trigger completes at 0. From 1 to
	// MaxRemainingRuns (FieldError remaining_runs).
	RemainingRuns int64
}

// MaxZones is the most zones a Trigger lists.
const MaxZones = 24

// MaxRemainingRuns is the largest Trigger.RemainingRuns.
const MaxRemainingRuns = 1_000_000_000

// Cron parses a Quartz cron expression in zone (an IANA name; "" means UTC), for a Trigger's
// Schedule.
func Cron(expr, zone string) (*schedule.Cron, error) {
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = schedule.LoadZone(zone); err != nil {
			return nil, err
		}
	}
	return schedule.ParseCron(expr, loc)
}

// ScheduleJob stores a job with its triggers in one transaction and returns the job's ID.
// Like every write method of the Scheduler, it runs in store.InTx, so an audit description
// the context carries (store.WithAudit) is logged in the same transaction.
func (s *Scheduler) ScheduleJob(ctx context.Context, job Job, triggers ...Trigger) (int64, error) {
	var id int64
	err := store.InTx(ctx, s.store, func(q store.Querier) (err error) {
		id, err = s.ScheduleJobTx(ctx, q, job, triggers...)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.engine.Wake()
	return id, nil
}

// ScheduleJobTx is ScheduleJob inside the caller's transaction, so a job can be created
// atomically with the caller's own rows.
func (s *Scheduler) ScheduleJobTx(ctx context.Context, tx store.Querier, job Job, triggers ...Trigger) (int64, error) {
	row, err := jobRow(job)
	if err != nil {
		return 0, err
	}
	if err := s.sealParams(job, row, nil); err != nil {
		return 0, err
	}
	if err := s.sealAlarmTargets(job, row, nil); err != nil {
		return 0, err
	}
	// Every trigger is checked before anything is written.
	rows := make([]*store.Trigger, len(triggers))
	seen := map[[2]string]int{}
	for i, t := range triggers {
		if t.Name == "" {
			t.Name = fmt.Sprintf("%s#%d", row.Name, i+1)
		}
		if t.Group == "" {
			// The job's group: its triggers' default names (JOB#N) are then unique wherever
			// job names are, and a job of the same name in another group does not collide.
			t.Group = row.Group
		}
		key := [2]string{t.Group, t.Name}
		field := fmt.Sprintf("triggers[%d]", i)
		if j, dup := seen[key]; dup {
			return 0, fmt.Errorf("sundial: job %s: %w", row.Name, schedule.Fieldf(field+".name", "trigger %q is also triggers[%d]", t.Name, j))
		}
		seen[key] = i
		if rows[i], err = s.triggerRow(ctx, tx, row, t); err != nil {
			if fe, ok := schedule.AsField(err); ok {
				return 0, fmt.Errorf("sundial: job %s: trigger %s: %w", row.Name, t.Name, fe.In(field))
			}
			return 0, err
		}
	}
	if err := checkChildJobs(ctx, tx, 0, row, nil); err != nil {
		return 0, err
	}
	if err := tx.JobInsert(ctx, row); err != nil {
		return 0, err // it names the job (store.ExistsError when the name is taken)
	}
	if err := recordScript(ctx, tx, row, "", job.ScriptNote, "created"); err != nil {
		return 0, err
	}
	for _, tr := range rows {
		tr.JobID = row.ID
		if err := s.insertTrigger(ctx, tx, tr); err != nil {
			return 0, err
		}
	}
	return row.ID, nil
}

// AddTrigger adds a trigger to an existing job.
func (s *Scheduler) AddTrigger(ctx context.Context, jobID int64, t Trigger) error {
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return s.addTrigger(ctx, q, jobID, t) }); err != nil {
		return err
	}
	s.engine.Wake()
	return nil
}

func (s *Scheduler) addTrigger(ctx context.Context, ex store.Querier, jobID int64, t Trigger) error {
	_, err := s.AddTriggerTx(ctx, ex, jobID, t)
	return err
}

// AddTriggerTx is AddTrigger inside the caller's transaction; it returns the stored trigger.
// The caller wakes the engine (Engine().Wake) once it has committed, if it runs.
func (s *Scheduler) AddTriggerTx(ctx context.Context, q store.Querier, jobID int64, t Trigger) (*store.Trigger, error) {
	row, err := s.TriggerRowTx(ctx, q, jobID, t)
	if err != nil {
		return nil, err
	}
	if err := s.insertTrigger(ctx, q, row); err != nil {
		return nil, err
	}
	return row, nil
}

// TriggerRowTx checks t as AddTrigger checks it (its calendar is looked up through q) and
// returns the row AddTrigger would store for jobID, without storing it.
func (s *Scheduler) TriggerRowTx(ctx context.Context, q store.Querier, jobID int64, t Trigger) (*store.Trigger, error) {
	job, err := q.JobGet(ctx, jobID)
	if err != nil {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	return s.triggerRow(ctx, q, job, t)
}

// insertTrigger stores row and, for a trigger of several zones, a zone row for each zone
// after its first (engine.ZoneRow), in ex's transaction.
func (s *Scheduler) insertTrigger(ctx context.Context, ex store.Querier, row *store.Trigger) error {
	if err := ex.TriggerInsert(ctx, row); err != nil {
		return fmt.Errorf("sundial: trigger %s/%s: %w", row.Group, row.Name, err)
	}
	for _, z := range row.Zones[min(1, len(row.Zones)):] {
		zr, err := s.engine.ZoneRow(ctx, ex, row, z)
		if err != nil {
			return fmt.Errorf("sundial: %w", err)
		}
		if err := ex.TriggerInsert(ctx, zr); err != nil {
			return fmt.Errorf("sundial: trigger %s/%s: zone %s: %w", row.Group, row.Name, z, err)
		}
	}
	return nil
}

// FieldError is bad input in one field of a Job, Trigger or Calendar, named as Sundial's
// REST API names it ("handler", "timeout_ms", "triggers[1].end"): the scheduler's methods
// return it (wrapped) for every check they make, so a caller can point at the field without
// reading the message.
type FieldError = schedule.FieldError

// jobRow validates j and returns the row to store.
func jobRow(j Job) (*store.Job, error) {
	bad := func(field, format string, args ...any) (*store.Job, error) {
		return nil, fmt.Errorf("sundial: job %s: %w", j.Name, schedule.Fieldf(field, format, args...))
	}
	if err := CheckName("name", j.Name); err != nil {
		return nil, fmt.Errorf("sundial: job %s: %w", j.Name, err)
	}
	if j.Group != "" {
		if err := CheckName("group", j.Group); err != nil {
			return nil, fmt.Errorf("sundial: job %s: %w", j.Name, err)
		}
	}
	switch {
	case j.Handler == "":
		return bad("handler", "must not be empty: name the handler that runs the job (e.g. noop)")
	case j.Timeout < 0:
		return bad("timeout_ms", "must not be negative, got %d", j.Timeout.Milliseconds())
	case j.MaxRetries < 0 || j.MaxRetries > math.MaxInt32:
		return bad("max_retries", "want 0 to %d, got %d", math.MaxInt32, j.MaxRetries)
	case j.RetryBackoff < 0:
		return bad("retry_backoff_ms", "must not be negative, got %d", j.RetryBackoff.Milliseconds())
	case j.Routing != "" && j.App == "":
		return bad("routing", "needs an app: routing picks among an app's executors")
	case j.DispatchTimeout < 0 || j.DispatchTimeout > MaxDispatchTimeout:
		return bad("dispatch_timeout_ms", "want 0 (the node's default) to %d, got %d", MaxDispatchTimeout.Milliseconds(), j.DispatchTimeout.Milliseconds())
	case j.DispatchTimeout > 0 && j.App == "":
		return bad("dispatch_timeout_ms", "needs an app: only a remote job waits for an executor")
	}
	if _, err := alarm.ParseTargets(j.AlarmTargets); err != nil {
		var te *alarm.TargetError
		if errors.As(err, &te) {
			return bad(fmt.Sprintf("alarm_targets[%d]", te.Index), "%v", te.Err)
		}
		return bad("alarm_targets", "%v", err)
	}
	policy := j.AlarmPolicy.row()
	if field, err := alarm.CheckPolicy(policy); err != nil {
		return bad("alarm_policy."+field, "%v", err)
	}
	if err := checkScriptNote(j.Name, j.ScriptNote); err != nil {
		return nil, err
	}
	if j.Group == "" {
		j.Group = "default"
	}
	if j.PauseAfterFailures < 0 || j.PauseAfterFailures > 1000 {
		return bad("pause_after_failures", "want 1 to 1000, or 0 for never, got %d", j.PauseAfterFailures)
	}
	overlap, err := jobrun.ParseOverlap(string(j.Concurrency), j.MaxConcurrent)
	if err != nil {
		var oe *jobrun.OverlapError
		errors.As(err, &oe)
		return bad(oe.Field, "%s", oe.Msg)
	}
	target := store.TargetLocal
	if j.App != "" {
		target = store.TargetRemote
		st, err := dispatch.ParseStrategy(j.Routing)
		if err != nil {
			return bad("routing", "%v", err)
		}
		j.Routing = string(st)
	}
	return &store.Job{
		Group: j.Group, Name: j.Name, Description: j.Description, TargetKind: target, App: j.App, Routing: j.Routing,
		Handler: j.Handler, Params: j.Params, Data: j.Data, Concurrency: Concurrency(overlap.Policy), MaxConcurrent: overlap.Max,
		PauseAfterFailures: j.PauseAfterFailures, PersistData: j.PersistData, RequestsRecovery: j.RequestsRecovery, TimeoutMs: j.Timeout.Milliseconds(),
		MaxRetries: j.MaxRetries, RetryBackoffMs: j.RetryBackoff.Milliseconds(), AlarmTargets: j.AlarmTargets,
		AlarmPolicy: policy, ChildJobIDs: j.ChildJobIDs, Enabled: true, DispatchTimeoutMs: j.DispatchTimeout.Milliseconds(),
	}, nil
}

// MaxDispatchTimeout bounds Job.DispatchTimeout: a fire that waits longer for an executor is
// late past any misfire threshold worth having.
const MaxDispatchTimeout = time.Hour

// triggerRow validates t as a trigger of job (not stored yet when its ID is 0), computes its
// first fire time (with its calendar) and returns the row to store.
func (s *Scheduler) triggerRow(ctx context.Context, ex store.Querier, job *store.Job, t Trigger) (*store.Trigger, error) {
	bad := func(err *schedule.FieldError) (*store.Trigger, error) {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	if t.Schedule == nil {
		return bad(schedule.Fieldf("schedule", "must be set"))
	}
	if t.Group == "" {
		t.Group = "default"
	}
	for _, f := range []struct{ field, name string }{{"name", t.Name}, {"group", t.Group}} {
		if err := CheckName(f.field, f.name); err != nil {
			return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
		}
	}
	zones, err := checkZones(t.TimeZone, t.Zones)
	if err != nil {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	if len(zones) > 0 {
		t.TimeZone = zones[0]
	}
	if t.TimeZone == "" {
		t.TimeZone = "UTC"
		if loc := schedule.LocationOf(t.Schedule); loc != nil {
			t.TimeZone = loc.String()
		}
	}
	if t.Priority == 0 {
		t.Priority = 5
	}
	loc, err := schedule.LoadZone(t.TimeZone)
	if err != nil {
		return bad(&schedule.FieldError{Field: "time_zone", Err: err})
	}
	if t.Start.IsZero() {
		t.Start = s.clock.Now()
	}
	// Rebuild the schedule from its stored form, so what fires is exactly what is stored.
	kind := t.Schedule.Kind()
	spec := schedule.EncodeSpec(t.Schedule)
	sched, err := schedule.DecodeSpec(kind, spec, loc)
	if err != nil {
		return bad(&schedule.FieldError{Field: "schedule", Err: err})
	}
	if sched, err = schedule.WithDST(sched, t.DST); err != nil {
		return bad(&schedule.FieldError{Field: "dst", Err: err})
	}
	if err := schedule.ValidateJitter(t.Jitter.Milliseconds()); err != nil {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	tr := &schedule.Trigger{Schedule: sched, Start: t.Start, End: t.End, Misfire: t.Misfire}
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	var cal schedule.Calendar
	if t.Calendar != "" {
		if cal, err = s.engine.Calendar(ctx, ex, t.Calendar, loc); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return bad(schedule.Fieldf("calendar", "no calendar %q is stored", t.Calendar))
			}
			return nil, fmt.Errorf("sundial: trigger %s: calendar %q: %w", t.Name, t.Calendar, err)
		}
	}
	first, err := tr.ComputeFirst(cal)
	if err != nil {
		return bad(&schedule.FieldError{Field: "schedule", Err: err})
	}
	if err := checkMinInterval(tr, cal, first, s.minInterval); err != nil {
		return bad(&schedule.FieldError{Field: "schedule", Err: err})
	}
	if t.CatchUpWindow < 0 || t.CatchUpWindow%time.Millisecond != 0 {
		return bad(schedule.Fieldf("catchup_window", "want a whole number of milliseconds, 0 or more, got %s", t.CatchUpWindow))
	}
	if t.CatchUp != "" && t.CatchUp != store.CatchUpCoalesce {
		return bad(schedule.Fieldf("catchup", "unknown catch-up mode %q (want coalesce, or none)", t.CatchUp))
	}
	if t.Priority > math.MaxInt32 || t.Priority < math.MinInt32 {
		return bad(schedule.Fieldf("priority", "want a 32-bit integer, got %d", t.Priority))
	}
	if t.RemainingRuns < 0 || t.RemainingRuns > MaxRemainingRuns {
		return bad(schedule.Fieldf("remaining_runs", "want 1 to %d, or 0 for no limit, got %d", MaxRemainingRuns, t.RemainingRuns))
	}
	params, err := s.runParams(job, t.Params)
	if err != nil {
		return nil, fmt.Errorf("sundial: trigger %s: %w", t.Name, err)
	}
	return &store.Trigger{
		JobID: job.ID, Group: t.Group, Name: t.Name, Description: t.Description, Kind: store.TriggerKind(kind), Spec: spec,
		TimeZone: t.TimeZone, StartAt: t.Start.UnixMilli(), EndAt: unixMilliOrZero(t.End),
		CalendarName: t.Calendar, Priority: t.Priority, MisfirePolicy: t.Misfire.String(),
		State: store.TriggerWaiting, NextFireAt: first.UnixMilli(), Params: params, Data: t.Data, RunLimit: t.RemainingRuns,
		JitterMs: t.Jitter.Milliseconds(), DSTPolicy: dstColumn(t.DST),
		CatchUpWindow: t.CatchUpWindow.Milliseconds(), CatchUp: t.CatchUp, Zones: zones,
	}, nil
}

// checkZones checks a trigger's zones (FieldError zones[i]) and returns them; nil for a
// trigger of one zone, which is then TimeZone (or the only zone listed).
func checkZones(timeZone string, zones []string) ([]string, error) {
	if len(zones) == 0 {
		return nil, nil
	}
	if len(zones) > MaxZones {
		return nil, schedule.Fieldf("zones", "at most %d zones, got %d", MaxZones, len(zones))
	}
	if timeZone != "" && timeZone != zones[0] {
		return nil, schedule.Fieldf("time_zone", "%q is not the first of zones (%q): give one or the other, or the same first", timeZone, zones[0])
	}
	seen := map[string]int{}
	for i, z := range zones {
		field := fmt.Sprintf("zones[%d]", i)
		if z == "" || strings.Contains(z, ",") {
			return nil, schedule.Fieldf(field, "want an IANA zone (e.g. Europe/Paris), got %q", z)
		}
		if _, err := schedule.LoadZone(z); err != nil {
			return nil, &schedule.FieldError{Field: field, Err: err}
		}
		if j, dup := seen[z]; dup {
			return nil, schedule.Fieldf(field, "%q is also zones[%d]", z, j)
		}
		seen[z] = i
	}
	if len(zones) == 1 {
		return nil, nil
	}
	return slices.Clone(zones), nil
}

// dstColumn is a DST policy as a trigger row stores it: "" for the default, so rows from
// before the policies and rows after read the same.
func dstColumn(p schedule.DSTPolicy) string {
	if p == schedule.DSTQuartz {
		return ""
	}
	return p.String()
}

// checkMinInterval refuses a trigger that would fire more often than min: it looks at the
// gaps between its first fires (a cron's or daily interval's tightest gap shows within a
// few). tr is advanced on a copy.
func checkMinInterval(tr *schedule.Trigger, cal schedule.Calendar, first time.Time, min time.Duration) error {
	if min <= 0 || first.IsZero() {
		return nil
	}
	probe, prev := *tr, first
	for range 16 {
		next, ok := probe.FireTimeAfter(prev)
		if !ok {
			return nil
		}
		if gap := next.Sub(prev); gap < min {
			return fmt.Errorf("fires %v apart; this scheduler allows at least %v between fires", gap, min)
		}
		prev = next
	}
	return nil
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
