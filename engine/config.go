package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/tracing"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// Dispatcher runs one fire and reports its outcome. It returns when the run is over; ctx is
// canceled when the job's timeout passes, when a replacing fire cancels it, or when the
// engine stops past its drain deadline.
type Dispatcher interface {
	Dispatch(ctx context.Context, f *Fire) Result
}

// Fire is an execution the engine is running, with its job.
type Fire struct {
	Execution *store.Execution
	Job       *store.Job
	// notBefore delays the start past the scheduled time (the app's fire-rate quota).
	notBefore int64
	// ownData is the job's own data when merged says Job.Data has the trigger's merged in
	// (withTriggerData): what a persisting run's data is stored over.
	ownData map[string]any
	merged  bool

	// acquiredAt is when this life acquired the fire; span is the fire's trace while it is
	// traced (nil with tracing off).
	acquiredAt time.Time
	span       trace.Span

	// WorkflowInput is, for a workflow node's run, what its handler is given (a
	// WorkflowInput as JSON: the run's params and the parents' results); "" otherwise.
	WorkflowInput string
}

// Params are what the run's handler is given: a run-now's own parameters, or the job's. A
// secret job's (Job.ParamsSecret) are in the job: the engine opens whichever of the two the
// run takes into its copy of the job, and the execution keeps them sealed.
func (f *Fire) Params() string {
	if f.Job.ParamsSecret {
		return f.Job.Params
	}
	return runParams(f.Job, f.Execution)
}

// runParams returns the params a run takes, as stored: its own (a run-now's or its trigger's)
// when it has some, else the job's. A script job's params are its script: a run never
// replaces them, even one whose params were given before the job became a script job.
func runParams(job *store.Job, ex *store.Execution) string {
	if ex.Params != "" && job.ScriptVersion == 0 {
		return ex.Params
	}
	return job.Params
}

// jobData returns the job's own data, without its trigger's.
func (f *Fire) jobData() map[string]any {
	if f.merged {
		return f.ownData
	}
	return f.Job.Data
}

// Result is the outcome of a fire.
type Result struct {
	// Err is nil for success. A run that returns after its context's deadline is recorded as
	// timed out, whatever Err says.
	Err  error
	Code int
	// Message is stored as the execution's handle message (with Err's text on failure).
	Message string
	// Data replaces the job's data when the job persists data; nil leaves it alone.
	Data map[string]any
	// Logs are the lines the run wrote.
	Logs []string
	// Return is the run's JSON result (at most store.MaxResultBytes; nil for none): a
	// workflow node's result, given to the nodes that follow it.
	Return json.RawMessage
	// Async says the fire was handed to an executor that reports its outcome later, to any
	// node, through Engine.CompleteRemote: the execution stays running until then, and the
	// executor applies the job's concurrency policy and timeout.
	Async bool
}

// Config configures an Engine. The zero value of each field but Store and Dispatcher means
// the stated default.
type Config struct {
	// Store is the database the cluster shares. Required.
	Store store.Store
	// Dispatcher runs fires. Required.
	Dispatcher Dispatcher
	// TracerProvider traces each fire (one trace per fire, internal/tracing); nil for none.
	// The engine uses the OpenTelemetry API only: the caller wires the SDK and its exporter.
	TracerProvider trace.TracerProvider
	// tracer is TracerProvider's, nil for none.
	tracer *tracing.Tracer
	// NodeID names this node in the cluster; it must be unique among live nodes.
	// Default: hostname-pid-random.
	NodeID string
	// Clock is the time source. Default: the system clock.
	Clock clock.Clock
	// Logger receives the engine's logs. Default: slog.Default().
	Logger *slog.Logger
	// Secrets opens the sealed params of jobs marked secret, to hand them to their runs (and
	// nowhere else). Without it a secret job's fires fail, saying no key is configured.
	Secrets *secret.Keyring

	// BatchSize is the most fires one acquisition round takes. Default 1000.
	BatchSize int
	// Acquirers is how many acquisition rounds run at once. Rounds never take the same
	// trigger (SKIP LOCKED), so on PostgreSQL and MySQL a second acquirer overlaps one round's
	// database work with another's, as a second node would; SQLite serialises them. Default 2.
	Acquirers int
	// LookAhead is how far ahead of their due time fires are acquired, so they wait in
	// memory and start at their exact millisecond. Default 2 s.
	LookAhead time.Duration
	// StartLead is how long (at least; at most twice that) before its due millisecond a fire
	// is claimed (its acquired -> running compare-and-set); the handler still starts at the due millisecond, so the
	// database round trip is not part of the lateness. A node that dies within the lead
	// leaves the fire running, and the leader declares it lost (then the job's retries
	// apply) instead of handing it to another node. Fires of jobs with a concurrency policy
	// other than allow are claimed when due, since a lead would judge the previous run too
	// early. Default 20 ms.
	StartLead time.Duration
	// PollInterval is the longest the acquirer sleeps when it knows of no due work.
	// Default 500 ms.
	PollInterval time.Duration
	// MisfireThreshold is how late a fire may be before its trigger's misfire policy applies
	// instead. Default 60 s (Quartz's default).
	MisfireThreshold time.Duration
	// MaxRunning bounds the handlers running at once on this node; further due fires wait.
	// Default 10,000.
	MaxRunning int
	// AppFiresPerSecond is the most fires of one app (executor group; in-process jobs are
	// the app "") the cluster starts in any one second. Fires over it are delayed, never
	// dropped: see quota.go. 0: no quota. Every node of a cluster should have the same.
	AppFiresPerSecond int
	// MaxHeld is the most fires the node holds acquired and not yet started; at the limit it
	// acquires no more until the starter catches up (other nodes take the work meanwhile).
	// Keep it above the fires one LookAhead brings. Default 50,000.
	MaxHeld int
	// CompleteBatch is the most results one write carries. Default 500.
	CompleteBatch int
	// CompleteLinger is how long the result writer waits for more results when a batch is
	// not full, so that results arriving one by one share a transaction. Default 5 ms;
	// negative writes each batch at once (tests on a fake clock, where no time passes
	// unless the test moves it).
	CompleteLinger time.Duration

	// HeartbeatInterval is how often the node records that it is alive. Default 2 s.
	HeartbeatInterval time.Duration
	// NodeTimeout is how long a node may miss heartbeats (by the database's clock) before the
	// leader declares it dead and recovers its work; after an outage of the database, a node
	// that has not beaten since gets six heartbeats more (see RecoverDeadNodes). Default 3 ×
	// HeartbeatInterval.
	NodeTimeout time.Duration
	// DrainTimeout is how long Stop waits for running handlers before canceling them.
	// Default 30 s.
	DrainTimeout time.Duration
	// LeaveTimeout bounds the rest of Stop after the drain: writing the last results,
	// handing acquired fires back and leaving the cluster, even when the database does not
	// answer. Default 10 s.
	LeaveTimeout time.Duration
}

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Store == nil {
		return out, errors.New("engine: Config.Store is required")
	}
	if out.Dispatcher == nil {
		return out, errors.New("engine: Config.Dispatcher is required")
	}
	if out.NodeID == "" {
		out.NodeID = defaultNodeID()
	}
	if out.Clock == nil {
		out.Clock = clock.Real{}
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	out.tracer = tracing.New(out.TracerProvider)
	setDefault(&out.BatchSize, 1000)
	setDefault(&out.Acquirers, 2)
	setDefault(&out.LookAhead, 2*time.Second)
	setDefault(&out.StartLead, 20*time.Millisecond)
	setDefault(&out.PollInterval, 500*time.Millisecond)
	setDefault(&out.MisfireThreshold, 60*time.Second)
	setDefault(&out.MaxRunning, 10000)
	setDefault(&out.CompleteBatch, 500)
	if out.CompleteLinger == 0 {
		out.CompleteLinger = 5 * time.Millisecond
	}
	setDefault(&out.MaxHeld, 50000)
	setDefault(&out.HeartbeatInterval, 2*time.Second)
	setDefault(&out.NodeTimeout, 3*out.HeartbeatInterval)
	setDefault(&out.DrainTimeout, 30*time.Second)
	setDefault(&out.LeaveTimeout, 10*time.Second)
	if out.AppFiresPerSecond < 0 || out.AppFiresPerSecond > maxFiresPerSecond {
		return out, fmt.Errorf("engine: Config.AppFiresPerSecond: want 0 (no quota) to %d, got %d", maxFiresPerSecond, out.AppFiresPerSecond)
	}
	if out.NodeTimeout <= out.HeartbeatInterval {
		return out, errors.New("engine: Config.NodeTimeout must be longer than HeartbeatInterval")
	}
	return out, nil
}

// maxFiresPerSecond bounds the quota: the quota keeps that many start times per app.
const maxFiresPerSecond = 100_000

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
