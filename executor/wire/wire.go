// Package wire holds the wire types of the native executor protocol
// (docs/executor-protocol.md): the one definition the executor SDK, the server's executor
// endpoints and the dispatcher speak, so that neither server side imports the SDK for them.
// Times are Unix milliseconds.
package wire

import (
	"fmt"
	"strings"
)

// Paths of the server's executor endpoints, under the server's base URL.
const (
	PathRegister   = "/api/v1/executor/register"
	PathUnregister = "/api/v1/executor/unregister"
	PathLogs       = "/api/v1/executor/logs"
	PathResults    = "/api/v1/executor/results"
)

// Headers on every executor → server request naming the sender: the server accepts output
// and results about a run only from the app and instance the run was dispatched to. The
// instance is proven by the instance's key (header execsign.ProofHeader): an instance id is
// the digest of its public key, so naming one proves nothing without that key.
const (
	HeaderApp      = "Sundial-Executor-App"
	HeaderInstance = "Sundial-Executor-Instance"
)

// Paths the executor serves, under the address it registered. Every call to them is signed
// with the cluster key (package internal/execsign, header execsign.Header) for the app and
// the instance (or, for beat and idle-beat that name none, the address) it is meant for; the
// executor refuses one that is not signed (401), and answers StatusMisdirected to one signed
// for another app, instance or address.
const (
	PathRun      = "/run"
	PathKill     = "/kill"
	PathBeat     = "/beat"
	PathIdleBeat = "/idle-beat"
)

// StatusMisdirected (421 Misdirected Request) is the executor's answer to a well-signed call
// meant for another executor: its body is a Misdirected. The call did nothing.
const StatusMisdirected = 421

// Reasons of a Misdirected answer.
const (
	MisdirectedApp      = "wrong_app"      // the call is for an executor of another app
	MisdirectedInstance = "wrong_instance" // the call is for another instance (the process before this one)
	MisdirectedAddress  = "wrong_address"  // the call names no instance and another address
)

// Misdirected is the body of a StatusMisdirected answer: why, and who answered.
type Misdirected struct {
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	App      string `json:"app"`
	Instance string `json:"instance"`
}

// Concurrency policies a run request may carry (internal/jobrun.Policy explains them). A
// server sends the first four names for allow, buffer_all, skip and terminate, which
// executors of every version read; the last three came with overlap policies.
const (
	ConcurrencyAllow     = "allow"
	ConcurrencySerial    = "serial"
	ConcurrencyDiscard   = "discard"
	ConcurrencyReplace   = "replace"
	ConcurrencyBufferOne = "buffer_one"
	ConcurrencyCancel    = "cancel"
	ConcurrencyAtMost    = "at_most"
)

// Final states a result may carry.
const (
	StateSucceeded = "succeeded"
	StateFailed    = "failed"
	StateTimedOut  = "timed_out"
	StateCanceled  = "canceled"
)

// Result codes, as XXL-JOB uses them: 200 success, 500 failure, 502 timeout.
const (
	CodeOK      = 200
	CodeFailed  = 500
	CodeTimeout = 502
)

// Registration is the body of register (the heartbeat) and, without Handlers and Held, of
// unregister.
type Registration struct {
	App     string `json:"app"`
	Address string `json:"address"`
	// Instance is the digest of the key pair the executor process makes at start
	// (execsign.InstanceKey), proven on each request: the server tells a restarted executor
	// on the same address from the one before by it.
	Instance string `json:"instance,omitempty"`
	// Version is what the executor runs, shown to operators (at most 100 characters).
	Version  string   `json:"version,omitempty"`
	Handlers []string `json:"handlers,omitempty"`
	// Held are the executions the instance holds: running or queued, or finished with a
	// result not delivered yet. The server declares lost no run its executor holds.
	Held []int64 `json:"held,omitempty"`
}

// RegisterResponse is the server's answer to register.
type RegisterResponse struct {
	HeartbeatIntervalMs int64 `json:"heartbeat_interval_ms"`
	// ClusterKeys are the public keys ("ed25519:<base64>") the server's calls to the executor
	// are signed with, newest first; each answer replaces the executor's set (a rotation).
	ClusterKeys []string `json:"cluster_keys"`
}

// LogBatch is the body of logs: output lines of one execution. Line numbers count from 1
// per execution, so a batch sent twice is stored once.
type LogBatch struct {
	ExecutionID int64     `json:"execution_id"`
	Lines       []LogLine `json:"lines"`
}

// MaxLineBytes is the longest output line the server takes (it refuses a batch with a
// longer one, or one with a NUL byte); the executor cuts longer lines.
const MaxLineBytes = 65535

// MaxResultLinesBytes bounds the messages of the output lines one result carries (Result.Lines),
// so that a result with its lines stays well inside one request body (1 MiB).
const MaxResultLinesBytes = 256 << 10

// LogLine is one output line.
type LogLine struct {
	Line    int64  `json:"line"`
	At      int64  `json:"at"`
	Message string `json:"message"`
}

// ResultBatch is the body of results.
type ResultBatch struct {
	Results []Result `json:"results"`
}

// Result is the outcome of one execution. StartedAt is 0 for a run that never started (it
// was canceled while queued).
type Result struct {
	ExecutionID int64  `json:"execution_id"`
	State       string `json:"state"`
	Code        int    `json:"code"`
	Message     string `json:"message"`
	StartedAt   int64  `json:"started_at,omitempty"`
	FinishedAt  int64  `json:"finished_at"`
	// Traceparent is the W3C trace context of the run (the executor's span, or the one the
	// /run request carried), so the server's write of the result joins the fire's trace.
	Traceparent string `json:"traceparent,omitempty"`
	// Lines are output lines of the run the server did not take while it ran (it was away,
	// or refused them): they travel with the result, and are spooled with it, so that an
	// outage costs the output nothing. At most MaxResultLinesBytes of messages, the newest.
	Lines []LogLine `json:"lines,omitempty"`
	// LinesLost counts the run's output lines the executor could not deliver, so the server
	// records that the run's output was cut.
	LinesLost int64 `json:"lines_lost,omitempty"`
	// Result is the run's JSON result (at most 64 KiB): a workflow node's result, given to
	// the nodes that follow it.
	Result RawJSON `json:"result,omitempty"`
}

// ResultsResponse is the server's answer to results: the ids whose state changed.
type ResultsResponse struct {
	Completed []int64 `json:"completed"`
}

// RunRequest is the body of run.
type RunRequest struct {
	ExecutionID int64  `json:"execution_id"`
	JobID       int64  `json:"job_id"`
	Handler     string `json:"handler"`
	Params      string `json:"params"`
	TimeoutMs   int64  `json:"timeout_ms"`
	Concurrency string `json:"concurrency"`
	ShardIndex  int    `json:"shard_index"`
	ShardTotal  int    `json:"shard_total"`
	ScheduledAt int64  `json:"scheduled_at"`
	Attempt     int    `json:"attempt"`
	// The fields below came later; an executor must not rely on an older server sending them.
	// TriggerID is 0 for a fire no trigger caused.
	TriggerID int64 `json:"trigger_id,omitempty"`
	// FiredAt is when the server started the fire.
	FiredAt int64 `json:"fired_at,omitempty"`
	// IdempotencyKey names the fire: its retries and recovery re-runs carry the same key.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// ParamsSecret says Params are secret (stored encrypted on the server): the executor must
	// not echo them into output, messages or logs.
	ParamsSecret bool `json:"params_secret,omitempty"`
	// Instance is the executor instance the server recorded the run for (the one registered
	// at the address), as its signature names it; an executor with another instance id
	// refuses the run (StatusMisdirected), so a run is only ever held by the instance the
	// server believes holds it.
	Instance string `json:"instance,omitempty"`
	// IntervalStart and IntervalEnd (Unix ms) are the run's data interval: the scheduled time
	// before this one and this one, or for a coalesced catch-up or a backfill chunk the span it
	// covers. Absent for runs no schedule made (run-now, child jobs).
	IntervalStart int64 `json:"interval_start,omitempty"`
	IntervalEnd   int64 `json:"interval_end,omitempty"`
	// BackfillID names the backfill that made the run; absent for others.
	BackfillID int64 `json:"backfill_id,omitempty"`
	// FireZone is the IANA zone the schedule fired in (a trigger of several zones fires in
	// each); absent for runs no schedule made.
	FireZone string `json:"fire_zone,omitempty"`
	// WorkflowInput is, for the run of a workflow node, what its handler is given: the run's
	// params and its parent nodes' results ({"run_id", "node", "params", "parents"}).
	WorkflowInput RawJSON `json:"workflow_input,omitempty"`
	// MaxConcurrent is the limit of concurrency at_most (1 to 1000): how many runs of the job
	// the executor runs side by side.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
}

// RunResponse is the executor's answer to run.
type RunResponse struct {
	Accepted bool   `json:"accepted"`
	Message  string `json:"message,omitempty"`
	// Instance is the answering executor's instance id.
	Instance string `json:"instance,omitempty"`
}

// KillRequest is the body of kill.
type KillRequest struct {
	ExecutionID int64 `json:"execution_id"`
}

// KillResponse is the executor's answer to kill.
type KillResponse struct {
	Killed bool `json:"killed"`
	// Instance is the answering executor's instance id: the server takes the answer only
	// from the instance the run was handed to.
	Instance string `json:"instance,omitempty"`
}

// BeatResponse is the executor's answer to beat: its instance id, by which the server ties a
// run sent to a manual address to the process that takes it.
type BeatResponse struct {
	Instance string `json:"instance,omitempty"`
}

// IdleBeatRequest is the body of idle-beat.
type IdleBeatRequest struct {
	JobID int64 `json:"job_id"`
}

// IdleBeatResponse is the executor's answer to idle-beat: true when no run of the job is in
// progress or queued.
type IdleBeatResponse struct {
	Idle bool `json:"idle"`
}

// StatusError is an HTTP answer of the protocol with a status other than success, in either
// direction: a refusal that repeating the same request will not change.
type StatusError struct {
	Path   string
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("POST %s: status %d: %s", e.Path, e.Status, e.Body)
}

// RawJSON is a JSON value carried as it is ("" for none). It is a string, not a byte slice,
// so the messages holding it stay comparable.
type RawJSON string

// MarshalJSON writes the value as it is, or null for none.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("null"), nil
	}
	return []byte(r), nil
}

// UnmarshalJSON keeps the value as it is ("" for null).
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = ""
		return nil
	}
	*r = RawJSON(b)
	return nil
}

// The stream transport (docs/executor-protocol.md, "The stream"): the executor dials
// PathStream on a server node (a WebSocket), authenticated as every request is (credential,
// app and instance headers, the proof of the instance's key over the opening GET), and holds
// it open. Each WebSocket text message is one StreamFrame. Over it go, both ways, the calls
// of the push transport unchanged (their paths and bodies), so each side serves them with
// the code that serves them over HTTP.
const (
	PathStream = "/api/v1/executor/stream"
	// StreamScheme prefixes the address a streamed instance registers: StreamScheme +
	// its instance id. Nothing listens there: a node sends that instance's runs down its
	// stream, and only a node that holds the stream can.
	StreamScheme = "stream://"
	// StreamSubprotocol is the WebSocket subprotocol both sides speak.
	StreamSubprotocol = "sundial-executor.v1"
)

// StreamFrame is one message of the stream. A frame carries calls or replies (or both).
type StreamFrame struct {
	// Calls are requests to the other side, a JSON array of StreamCall kept as sent (the
	// signature covers these bytes): from the server the executor's calls (/run, /kill,
	// /beat, /idle-beat), in a batch; from the executor the server's executor routes
	// (register, unregister, logs, results).
	Calls RawJSON `json:"calls,omitempty"`
	// Signature signs, from the server, Calls as the body of one call of path PathStream
	// (the execsign header's value, for the executor's app, instance and StreamAddress):
	// the executor verifies a batch once.
	Signature string `json:"signature,omitempty"`
	// Replies answer calls the other side made, by id.
	Replies []StreamReply `json:"replies,omitempty"`
}

// StreamCall is one call over the stream: the path and body it has over HTTP.
type StreamCall struct {
	ID   uint64  `json:"id"`
	Path string  `json:"path"`
	Body RawJSON `json:"body,omitempty"`
}

// StreamReply answers the call with the same id: the HTTP status and body it would have had.
type StreamReply struct {
	ID     uint64  `json:"id"`
	Status int     `json:"status"`
	Body   RawJSON `json:"body,omitempty"`
}

// StreamAddress is the address a streamed instance registers.
func StreamAddress(instance string) string { return StreamScheme + instance }

// IsStreamAddress tells a stream executor's address: it names one executor process, which
// holds it only while its registration lives.
func IsStreamAddress(address string) bool { return strings.HasPrefix(address, StreamScheme) }
