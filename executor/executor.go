package executor

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// Config configures an Executor. Server or Servers, Token and App are required.
type Config struct {
	// Server is the base URL of a server node, e.g. "http://sched:8080".
	Server string
	// Servers are the base URLs of more server nodes (after Server, when both are set). The
	// executor registers with, heartbeats to and reports to the one it used last, and moves to
	// the next when that one does not answer, within the same call.
	Servers []string
	// Token is the executor's credential (the app's, made by sundial app credential create),
	// sent to the server as a bearer token. The server's calls to the executor carry no token:
	// they are signed with the cluster key the server gives the executor in its answer to
	// each registration, so the credential never travels to the executor's own address.
	Token string
	// App is the executor group this instance joins.
	App string
	// TracerProvider makes the span around each run, a child of the server's dispatch span
	// (the handler's context carries it). Default: OpenTelemetry's global provider, which
	// records nothing unless the program sets one.
	TracerProvider trace.TracerProvider
	// Version is what this executor reports it runs, shown by `sundial executor list`.
	// Default: the version of the Sundial module it is built with.
	Version string
	// Transport is how the server's calls reach the executor: TransportStream (the default)
	// or TransportPush.
	Transport string
	// Listen is the address the executor's HTTP endpoint listens on (push transport only).
	// Default ":9999".
	Listen string
	// Advertise is the URL the server calls this executor on, e.g. "http://10.0.0.5:9999".
	// Default: the listener's address; when it listens on all interfaces, the local address
	// of the interface that routes to the first server.
	Advertise string
	// HeartbeatInterval is how often the registration is repeated. Default: the interval
	// the server asks for in its answer to register.
	HeartbeatInterval time.Duration
	// SpoolDir keeps results that could not be delivered yet, with the output lines they
	// carry, until they are (JSON files, one for each time results were set aside). Default:
	// sundial-executor/<App> under os.UserCacheDir.
	SpoolDir string
	// Logger receives the executor's own log (not the runs' output). Default slog.Default().
	Logger *slog.Logger
	// HTTPClient makes the calls to the server. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// HTTP bounds what one caller of the endpoint may hold: timeouts and a connection cap.
	HTTP httpserve.Limits
	// TLS, when set, serves the endpoint over HTTPS with its certificate (reloaded when the
	// files change); the derived Advertise address is then https://. The default HTTPClient
	// also presents it as the executor's client certificate when a server asks for one.
	TLS *httpserve.CertFile
	// TLSCA, when set, turns on mutual TLS on the executor channel (with TLS): the endpoint
	// refuses a caller without a client certificate signed by it (the servers'), and the
	// default HTTPClient verifies the servers' certificates against it.
	TLSCA *x509.CertPool
	// Map tunes the runner of the sub-tasks of MapReduce handlers (HandleMapReduce).
	Map MapConfig
	// MaxRuns bounds the runs this executor holds at once: running, or queued behind their
	// job's concurrency policy. A run past it is answered 429 (busy) before it is taken, so
	// it stays with the server, which offers it to the app's other executors and then again
	// every heartbeat interval, up to the job's dispatch timeout: an executor that cannot
	// keep up makes runs late, rather than piling up more processes than its machine can
	// run and missing its heartbeats. Default DefaultMaxRuns; negative: no bound.
	MaxRuns int
	// Clock is the time source of the heartbeat, the output flushes, the grace a canceled
	// handler gets and the times results carry. A job's timeout stays a deadline of the run's
	// context, which handlers read in real time. Default: clock.Real{}.
	Clock clock.Clock
}

// Handler runs one execution. Its context carries the run ([RunFrom]) and a logger whose
// lines go to the server ([Logger]); it is canceled on timeout, kill, replacement by a newer
// run, or executor stop. A nil error is success.
type Handler func(ctx context.Context) error

// Transports (Config.Transport).
const (
	// TransportStream: the executor dials every server node it is given and holds a stream
	// (a WebSocket) open to each; the nodes send its runs down the streams, and its
	// registrations, output and results go up them. It listens on no port, so it works behind
	// NAT and in containers whose address the servers cannot reach.
	TransportStream = "stream"
	// TransportPush: the executor listens (Listen), registers the address the servers reach
	// it at (Advertise), and the servers POST its runs there.
	TransportPush = "push"
)

const (
	defaultListen    = ":9999"
	defaultHeartbeat = 3 * time.Second
	// abandonGrace is how long a canceled handler may take to return before its result is
	// reported anyway: a handler that ignores its context must not hold the job forever.
	abandonGrace = 5 * time.Second
	maxBody      = 1 << 20
)

// Executor is one executor instance. Create it with New, add handlers with Handle, then
// Start it; Stop it to leave.
type Executor struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client

	mu       sync.Mutex
	handlers map[string]Handler
	// mapReduces are the MapReduce handlers; mapRun runs their sub-tasks (mapreduce.go).
	mapReduces map[string]MapReduce
	mapRun     *mapRunner
	conc       *jobrun.Tracker[*runState] // the concurrency policies of accepted runs
	runs       map[int64]*runState        // accepted and not yet reported, by execution id
	// ended remembers the runs that finished lately, so that a /run the server repeats
	// (its first answer was lost) is answered "accepted" and not run again.
	ended map[int64]time.Time
	// endedOrder lists ended's runs in the order they ended, from endedHead on: forgetting
	// those past endedMemory takes the oldest off its front, a few at each run, where a scan
	// of the whole map (rememberEnded did one every 1,024 runs) grows with the run rate.
	endedOrder []endedRun
	endedHead  int
	started    bool
	stopping   bool

	running sync.WaitGroup // handler runs in progress
	rep     *reporter
	// verify checks the signatures of the server's calls with the cluster keys the last
	// registration answer named.
	verify *execsign.Verifier
	// key proves this process's instance on its requests to the server; instance is its id.
	key *execsign.InstanceKey

	baseCtx    context.Context // parent of every run; canceled when Stop ends
	baseCancel context.CancelFunc
	hbCancel   context.CancelFunc
	hbDone     chan struct{}
	srv        *http.Server
	srvDone    chan struct{}
	address    string
	interval   time.Duration // heartbeat interval in use; guarded by mu
	instance   string        // this process's id, sent with every registration
	servers    []string      // base URLs of the server nodes
	server     atomic.Int64  // index in servers of the node that answered last
	streams    streams       // the stream transport's streams, one per server (stream.go)
	callTable  map[string]call

	stopOnce sync.Once
	stopErr  error
}

// New checks cfg, fills in defaults and returns an Executor that is not started yet.
func New(cfg Config) (*Executor, error) {
	servers, err := serverList(cfg.Server, cfg.Servers)
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" || cfg.App == "" {
		return nil, errors.New("executor: Server, Token and App are required")
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.Version == "" {
		cfg.Version = version.Module()
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = TransportStream
	case TransportStream, TransportPush:
	default:
		return nil, fmt.Errorf("executor: Transport %q: want %q or %q", cfg.Transport, TransportStream, TransportPush)
	}
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if cfg.Advertise != "" {
		a, err := url.Parse(cfg.Advertise)
		if err != nil || (a.Scheme != "http" && a.Scheme != "https") || a.Host == "" {
			return nil, fmt.Errorf("executor: Advertise %q: want an http(s) URL", cfg.Advertise)
		}
		cfg.Advertise = strings.TrimRight(cfg.Advertise, "/")
	}
	if cfg.SpoolDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("executor: no SpoolDir and no user cache directory: %w", err)
		}
		cfg.SpoolDir = filepath.Join(dir, "sundial-executor", cfg.App)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MaxRuns == 0 {
		cfg.MaxRuns = DefaultMaxRuns
	}
	if cfg.TLSCA != nil && cfg.TLS == nil {
		return nil, errors.New("executor: TLSCA (mutual TLS) needs TLS, the executor's certificate")
	}
	key, err := execsign.NewInstanceKey()
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if cfg.HTTPClient == nil {
		// Results and output go to one server: keep enough connections to it open that
		// concurrent runs reuse them (the default transport keeps two).
		cfg.HTTPClient = httpserve.Client(10*time.Second, cfg.TLSCA, cfg.TLS)
	}
	e := &Executor{
		cfg:      cfg,
		log:      cfg.Logger.With("app", cfg.App),
		client:   cfg.HTTPClient,
		handlers: map[string]Handler{},
		conc:     jobrun.NewTracker[*runState](),
		runs:     map[int64]*runState{},
		ended:    map[int64]time.Time{},
		servers:  servers,
		instance: key.ID(),
		key:      key,
		verify:   execsign.NewVerifier(cfg.Clock.Now),
	}
	e.callTable = e.calls()
	e.mapReduces = map[string]MapReduce{}
	e.mapRun = &mapRunner{}
	e.mapRun.Init()
	e.baseCtx, e.baseCancel = context.WithCancel(context.Background())
	return e, nil
}

// Handle registers h under name. Handlers added after Start are announced with the next
// heartbeat.
func (e *Executor) Handle(name string, h Handler) {
	if name == "" || h == nil {
		panic("executor: Handle needs a name and a handler")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handlers[name] = h
}

// Address is the URL the executor registered, valid after Start.
func (e *Executor) Address() string { return e.address }

// Start opens the spool, opens its streams to the servers (or, with TransportPush, listens),
// and registers. It returns once the first registration succeeded; it keeps retrying a
// registration the server cannot answer (network error, 5xx) until ctx ends, and fails at
// once on a refusal (401, 400). After Start the executor heartbeats and delivers results in
// the background until Stop.
func (e *Executor) Start(ctx context.Context) error {
	e.mu.Lock()
	if e.started || e.stopping {
		e.mu.Unlock()
		return errors.New("executor: Start called twice")
	}
	e.started = true
	e.mu.Unlock()

	rep, err := newReporter(e, e.cfg.SpoolDir)
	if err != nil {
		return err
	}
	if e.cfg.Transport == TransportStream {
		// Nothing listens: the executor is reached down the streams it opens.
		e.address = wire.StreamAddress(e.instance)
		e.openStreams()
		e.awaitStream(ctx)
	} else if err := e.listen(); err != nil {
		return err
	}
	// Spooled results of an earlier process go out as soon as possible, even before the
	// registration: the server takes results from any executor with the token.
	e.rep = rep
	go rep.loop()

	if err := e.registerUntil(ctx); err != nil {
		e.rep.close(context.WithoutCancel(ctx))
		if e.srv != nil {
			_ = e.srv.Close()
			<-e.srvDone
		}
		e.closeStreams()
		return err
	}
	hbCtx, cancel := context.WithCancel(context.Background())
	e.hbCancel, e.hbDone = cancel, make(chan struct{})
	go e.heartbeat(hbCtx)
	e.startMapRunner()
	e.log.Info("executor started", "transport", e.cfg.Transport, "address", e.address, "instance", e.instance, "servers", e.servers, "handlers", e.handlerNames())
	return nil
}

// listen starts the push transport's endpoint.
func (e *Executor) listen() error {
	ln, err := net.Listen("tcp", e.cfg.Listen)
	if err != nil {
		return fmt.Errorf("executor: listen on %s: %w", e.cfg.Listen, err)
	}
	e.address = e.cfg.Advertise
	if e.address == "" {
		e.address = e.advertiseFor(ln.Addr().(*net.TCPAddr))
	}
	e.srv = httpserve.NewServer(e.routes(), e.cfg.HTTP, e.cfg.TLS, e.log)
	httpserve.ClientCerts(e.srv, e.cfg.TLSCA, true) // only servers call the endpoint
	e.srvDone = make(chan struct{})
	go func() {
		defer close(e.srvDone)
		if err := httpserve.Serve(e.srv, ln, e.cfg.HTTP); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("executor endpoint stopped", "err", err)
		}
	}()
	return nil
}

// advertiseFor derives the URL the server can reach the listener on.
func (e *Executor) advertiseFor(addr *net.TCPAddr) string {
	ip := addr.IP
	if ip == nil || ip.IsUnspecified() {
		ip = outboundIP(e.servers[0])
	}
	scheme := "http://"
	if e.cfg.TLS != nil {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(ip.String(), fmt.Sprint(addr.Port))
}

// outboundIP is the local address of the interface that routes to server. A UDP "dial"
// sends nothing; it only asks the kernel for the route.
func outboundIP(server string) net.IP {
	u, err := url.Parse(server)
	if err == nil {
		port := u.Port()
		if port == "" {
			port = "80"
		}
		if c, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port)); err == nil {
			defer c.Close()
			return c.LocalAddr().(*net.UDPAddr).IP
		}
	}
	return net.IPv4(127, 0, 0, 1)
}

func (e *Executor) handlerNames() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.handlers))
	for n := range e.handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// register sends one registration and adopts the server's heartbeat interval.
func (e *Executor) register(ctx context.Context) error {
	var resp wire.RegisterResponse
	reg := wire.Registration{App: e.cfg.App, Address: e.address, Instance: e.instance, Version: e.cfg.Version,
		Handlers: e.handlerNames(), Held: e.held()}
	if err := e.post(ctx, wire.PathRegister, reg, &resp); err != nil {
		return err
	}
	if len(resp.ClusterKeys) == 0 {
		// A server that names no key cannot sign its calls, and none would be taken.
		return keyError{errors.New("the server's answer to register names no cluster key (a server older than the signed protocol?)")}
	}
	if err := e.verify.SetKeys(resp.ClusterKeys); err != nil {
		return keyError{err}
	}
	interval := e.cfg.HeartbeatInterval
	if interval <= 0 {
		interval = time.Duration(resp.HeartbeatIntervalMs) * time.Millisecond
	}
	if interval <= 0 {
		interval = defaultHeartbeat
	}
	e.mu.Lock()
	e.interval = interval
	e.mu.Unlock()
	return nil
}

func (e *Executor) registerUntil(ctx context.Context) error {
	pause := backoff.Sequence{Policy: backoff.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second}}
	for {
		err := e.register(ctx)
		if err == nil {
			return nil
		}
		if permanent(err) {
			return fmt.Errorf("executor: register with %s: %w", strings.Join(e.servers, ", "), err)
		}
		e.log.Warn("registration failed; retrying", "servers", e.servers, "err", err)
		t := e.cfg.Clock.NewTimer(pause.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("executor: register with %s: %w (last error: %w)", strings.Join(e.servers, ", "), ctx.Err(), err)
		case <-t.C():
		}
	}
}

// heartbeat repeats the registration every interval until ctx ends. A failed one is only
// logged: the server forgets the executor after three missed intervals, and the next
// success brings it back.
//
// After a failed heartbeat the next comes sooner (from 200 ms, doubling up to the interval),
// so the executor is back in the registry moments after the servers are (a database outage
// ends), before the sweep takes its silence for a departure.
func (e *Executor) heartbeat(ctx context.Context) {
	defer close(e.hbDone)
	failed := 0
	for {
		e.mu.Lock()
		interval := e.interval
		e.mu.Unlock()
		pause := interval
		if failed > 0 {
			pause = backoff.Policy{Initial: 200 * time.Millisecond, Max: interval}.Delay(failed - 1)
		}
		t := e.cfg.Clock.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := e.register(ctx); err != nil && ctx.Err() == nil {
			failed++
			e.log.Warn("heartbeat failed", "servers", e.servers, "err", err)
		} else {
			failed = 0
		}
	}
}

// Stop leaves: it refuses new runs, cancels queued ones, unregisters, waits for running
// handlers until ctx ends (then cancels them), and flushes results, spooling what the server
// does not take. It is idempotent; later calls return the first call's error.
func (e *Executor) Stop(ctx context.Context) error {
	e.stopOnce.Do(func() { e.stopErr = e.stop(ctx) })
	return e.stopErr
}

func (e *Executor) stop(ctx context.Context) error {
	e.mu.Lock()
	e.stopping = true
	started := e.started
	queued := e.conc.TakeAllQueued()
	e.mu.Unlock()
	defer e.baseCancel()
	if !started || e.hbDone == nil {
		return nil
	}
	for _, rs := range queued {
		e.finish(rs, wire.Result{State: wire.StateCanceled, Code: wire.CodeFailed, Message: "executor stopped before the run started"}, time.Time{})
	}
	// Sub-tasks first: those that end report while the instance is registered, and the
	// unregister below hands back what was cut short.
	e.mapRun.Stop()
	e.hbCancel()
	<-e.hbDone
	var errs []error
	if err := e.post(ctx, wire.PathUnregister, wire.Registration{App: e.cfg.App, Address: e.address, Instance: e.instance}, nil); err != nil {
		errs = append(errs, fmt.Errorf("unregister: %w", err))
	}

	e.logDrain(ctx)
	drained := make(chan struct{})
	go func() { e.running.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		e.log.Warn("stop: canceling running handlers", "err", ctx.Err())
		e.cancelAll(&stopCause{state: wire.StateCanceled, code: wire.CodeFailed, msg: "executor stopped"})
		<-drained // each run reports within abandonGrace of its cancellation
	}

	// The endpoint (or the streams) stays up while handlers drain so that kill still works.
	if e.srv != nil {
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(shutCtx); err != nil {
			_ = e.srv.Close()
		}
		<-e.srvDone
	}
	// Results go up the streams while they are open.
	if err := e.rep.close(ctx); err != nil {
		errs = append(errs, err)
	}
	e.closeStreams()
	e.log.Info("executor stopped", "address", e.address)
	return errors.Join(errs...)
}

// logDrain says which runs stop waits for, and how long it waits before canceling them:
// a Ctrl-C that seems to hang is explained.
func (e *Executor) logDrain(ctx context.Context) {
	e.mu.Lock()
	ids := make([]int64, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	wait := "until they end"
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d).Round(100 * time.Millisecond).String()
	}
	e.log.Info("stopping: waiting for running jobs to finish; those still running after the wait are canceled", "execution_ids", ids, "wait", wait)
}

func (e *Executor) cancelAll(cause error) {
	e.conc.CancelAll(cause)
}

// routes serves the server's calls. Every one must be signed with a cluster key for this app
// and this instance (or, for the harmless beat and idle-beat, for this address): see signed.
func (e *Executor) routes() http.Handler {
	mux := http.NewServeMux()
	for path, c := range e.callTable {
		mux.HandleFunc("POST "+path, e.signed(path, c.needInstance, c.serve))
	}
	return mux
}

// call serves one of the server's calls, over HTTP or a stream: body is read, the signature
// checked, and to the instance it was signed for.
type call struct {
	needInstance bool
	serve        func(w http.ResponseWriter, r *http.Request, body []byte, to string)
}

// calls are the server's calls by path.
func (e *Executor) calls() map[string]call {
	return map[string]call{
		wire.PathRun: {true, func(w http.ResponseWriter, r *http.Request, body []byte, to string) {
			var req wire.RunRequest
			if !decode(w, body, &req) {
				return
			}
			if req.Instance != to {
				http.Error(w, fmt.Sprintf("the run names instance %q and its signature %q", req.Instance, to), http.StatusBadRequest)
				return
			}
			// The server sends the fire's trace context (W3C traceparent) with the run.
			resp, busy := e.accept(req, trace.SpanContextFromContext(traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))))
			if busy {
				// A status, not a refusal: the server keeps the run and offers it again.
				http.Error(w, resp.Message, http.StatusTooManyRequests)
				return
			}
			resp.Instance = e.instance
			writeJSON(w, resp)
		}},
		wire.PathKill: {true, func(w http.ResponseWriter, r *http.Request, body []byte, _ string) {
			var req wire.KillRequest
			if !decode(w, body, &req) {
				return
			}
			writeJSON(w, wire.KillResponse{Killed: e.kill(req.ExecutionID), Instance: e.instance})
		}},
		wire.PathBeat: {false, func(w http.ResponseWriter, _ *http.Request, _ []byte, _ string) {
			writeJSON(w, wire.BeatResponse{Instance: e.instance})
		}},
		wire.PathIdleBeat: {false, func(w http.ResponseWriter, _ *http.Request, body []byte, _ string) {
			var req wire.IdleBeatRequest
			if !decode(w, body, &req) {
				return
			}
			writeJSON(w, wire.IdleBeatResponse{Idle: e.idle(req.JobID)})
		}},
	}
}

// signed admits a call to path only with a valid cluster signature (execsign): by a key the
// server gave at the last registration, recent, not seen before, over this method, path and
// body, and meant for this executor: this app, and this instance (a run and a kill must name
// one) or, naming none, this address. A call meant for another executor is answered
// wire.StatusMisdirected and does nothing: whatever address the server was told, an executor
// takes only its own app's calls, so another app's credential cannot steer its work here.
// h gets the body read and the instance signed for.
func (e *Executor) signed(path string, needInstance bool, h func(w http.ResponseWriter, r *http.Request, body []byte, to string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, fmt.Sprintf("read the request body: %v", err), http.StatusBadRequest)
			return
		}
		if len(body) > maxBody {
			http.Error(w, "request body larger than 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		to, err := e.verify.Verify(r, path, body)
		if err == nil && needInstance && to.Instance == "" {
			err = fmt.Errorf("%w: %s must be signed for an executor instance", execsign.ErrRefused, path)
		}
		if err != nil {
			e.log.Warn("refused an unsigned or badly signed call", "path", path, "remote", r.RemoteAddr, "err", err)
			w.Header().Set("WWW-Authenticate", `Sundial-Signature realm="sundial-executor"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if m := e.misdirected(to); m != nil {
			e.log.Warn("refused a call meant for another executor", "path", path, "remote", r.RemoteAddr, "reason", m.Reason, "err", m.Message)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(wire.StatusMisdirected)
			_ = json.NewEncoder(w).Encode(m)
			return
		}
		h(w, r, body, to.Instance)
	}
}

// misdirected tells why a call signed for to is not this executor's, or nil when it is.
func (e *Executor) misdirected(to execsign.Target) *wire.Misdirected {
	m := &wire.Misdirected{App: e.cfg.App, Instance: e.instance}
	switch {
	case to.App != e.cfg.App:
		m.Reason, m.Message = wire.MisdirectedApp, fmt.Sprintf("the call is for an executor of app %q, this is app %q's", to.App, e.cfg.App)
	case to.Instance != "" && to.Instance != e.instance:
		m.Reason, m.Message = wire.MisdirectedInstance, fmt.Sprintf("the call is for executor instance %s, this is %s", to.Instance, e.instance)
	case to.Instance == "" && strings.TrimRight(to.Address, "/") != e.address:
		m.Reason, m.Message = wire.MisdirectedAddress, fmt.Sprintf("the call is for the executor at %q, this is %q", to.Address, e.address)
	default:
		return nil
	}
	return m
}

func decode(w http.ResponseWriter, body []byte, v any) bool {
	if err := wire.Decode(body, v); err != nil {
		http.Error(w, fmt.Sprintf("bad request body: %v", err), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// keyError is a register answer without usable cluster keys: repeating it will not help.
type keyError struct{ error }

func (k keyError) Unwrap() error { return k.error }

// permanent reports whether err is a refusal that repeating the same request cannot fix.
func permanent(err error) bool {
	if errors.As(err, new(keyError)) {
		return true
	}
	var se *wire.StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return se.Status >= 400 && se.Status < 500
}

// postTo sends body (JSON) to path on the server at base and decodes a JSON answer into out
// (if not nil).
func (e *Executor) postTo(ctx context.Context, server int, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.servers[server]+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.cfg.Token)
	req.Header.Set(wire.HeaderApp, e.cfg.App)
	req.Header.Set(wire.HeaderInstance, e.instance)
	e.key.Prove(req, path, body, e.cfg.App, e.cfg.Clock.Now())
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &wire.StatusError{Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(out); err != nil {
		return fmt.Errorf("POST %s: decode answer: %w", path, err)
	}
	return nil
}
