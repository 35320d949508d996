// Package server is Sundial's HTTP face: one scheduler node together with the REST API under
// /api/v1 (jobs, triggers, calendars, executions, nodes, tokens, apps and executors, and the
// executor protocol), its OpenAPI document, Prometheus metrics and health checks, over a
// service layer of typed operations (endpoint.go, ops.go) that the web console (package web,
// mounted with MountConsole) calls in process.
package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/groupcommit"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/internal/setting"
	"github.com/sundial-scheduler/sundial/maintenance"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// Config configures a Server. Only Store is required.
type Config struct {
	// Store is the migrated database the node and the API share.
	Store store.Store
	// Scheduler tunes the node (NodeID, intervals). Store and Logger may be given here or
	// in it, not differently in both; its Dispatcher is the server's own and must be unset.
	Scheduler sundial.Config
	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger
	// SessionTTL is how long a console login lasts. Default 12 h.
	SessionTTL time.Duration
	// ShutdownTimeout bounds the wait for open requests when the server stops. Default 10 s.
	ShutdownTimeout time.Duration
	// ExecutorToken is the global secret executors of any app may present (deprecated: give
	// each app its credential, sundial app credential create). The server never sends it:
	// its calls to executors are signed with the cluster key (docs/executor-protocol.md).
	ExecutorToken string
	// ExecutorHeartbeat is the heartbeat interval announced to executors; an instance silent
	// for three is gone. Default dispatch.DefaultHeartbeatInterval.
	ExecutorHeartbeat time.Duration
	// ExecutorWait is how long a fire that finds no executor of its app online waits for one
	// before it fails. Default dispatch.DefaultExecutorWait (a minute, the default misfire
	// threshold).
	ExecutorWait time.Duration
	// Retention is how long finished executions and their output are kept; the leader
	// deletes older ones. Default 30 days.
	Retention time.Duration
	// AuditRetention is how long audit log entries are kept, apart from Retention: an
	// audit trail usually outlives run history. Default 365 days.
	AuditRetention time.Duration
	// SMTP is the mail server e-mail alarms go through; with no Addr they fail (webhooks
	// still work).
	SMTP alarm.SMTP
	// AlarmInterval is how often the leader delivers pending alarms. Default 10 s.
	AlarmInterval time.Duration
	// AlarmAttempts is how often a failing alarm target is tried before the alarm is marked
	// failed (default 3); AlarmBackoff is the first pause between tries, doubled after
	// each (default 5 s).
	AlarmAttempts int
	AlarmBackoff  time.Duration
	// PagerDutyURL replaces PagerDuty's Events API v2 URL for pagerduty: alarm targets (an
	// egress proxy, a test's fake). Default alarm.PagerDutyEventsURL.
	PagerDutyURL string
	// ReportInterval is how often the leader recomputes today's and yesterday's daily
	// report rows. Default 1 min.
	ReportInterval time.Duration
	// HTTP bounds what one client may hold: timeouts and a connection cap.
	HTTP httpserve.Limits
	// TLS, when set, serves HTTPS with its certificate (reloaded when the files change).
	TLS *httpserve.CertFile
	// ExecutorCA, when set, turns on mutual TLS on the executor channel: the executor routes
	// refuse a request without a client certificate signed by it (the port still serves
	// people without one; needs TLS), and the server verifies executors' certificates
	// against it when it calls them. ExecutorTLS is the client certificate the server
	// presents to executors (reloaded when the files change).
	ExecutorCA  *x509.CertPool
	ExecutorTLS *httpserve.CertFile
	// ExecutorNetworks, when set, are the only networks manual executor addresses may be in
	// (sundial server --executor-networks).
	ExecutorNetworks []netip.Prefix
	// TrustedProxies are the TLS-terminating proxies whose X-Forwarded-Proto is believed,
	// for Secure cookies and HSTS.
	TrustedProxies httpserve.Proxies
	// Login limits failed logins and the password hashing they cost.
	Login LoginLimits
	// Input limits what jobs and triggers may ask of the scheduler.
	Input InputLimits
	// OIDC turns on single sign-on with an OpenID Connect provider; nil: off.
	OIDC *OIDCConfig
	// SecretKey seals what the server must read back but keeps out of the database's clear
	// text: the access tokens of xxl-job apps, which it presents to their executors
	// (sundial server --secret-key), and, unless Scheduler.Secrets is given, secret job
	// params (secret.FromFlag reads it). Without it no xxl-job token and no secret params can
	// be set. Every node of a cluster needs the same key.
	SecretKey string
	// XXLContextPath is where the XXL-JOB admin API (/api/registry, /api/registryRemove,
	// /api/callback) is served, besides at /. Default /xxl-job-admin.
	XXLContextPath string
	// XXLLogInterval is how often a live XXL-JOB run's output is pulled. Default 1 s.
	XXLLogInterval time.Duration
}

// Server is one node: the engine plus the HTTP API.
type Server struct {
	cfg   Config
	store store.Store
	sched *sundial.Scheduler
	log   *slog.Logger
	clock clock.Clock
	auth  *authenticator
	// logins limits failed logins and the password hashing they cost.
	logins *loginLimiter
	mux    *http.ServeMux
	// handler is mux wrapped in logging and metrics; each route guards its own access.
	handler http.Handler
	metrics *metrics
	// rejected counts executor reports refused (see executors_trust.go).
	rejected *prometheus.CounterVec
	// alarms delivers alarms while this node leads.
	alarms *alarm.Sender
	// remote dispatches to executors; the API uses it to kill runs.
	remote *dispatch.Remote
	// results completes the executors' results of concurrent requests together
	// (executorResults).
	results *groupcommit.Batcher[[]engine.RemoteResult, []int64]
	// dispatchReads reads whom the runs that concurrent executor requests report on were
	// handed to, in one read; logAppends stores their output together (executorLogs).
	dispatchReads *groupcommit.Batcher[[]int64, map[int64]*store.Dispatched]
	logAppends    *groupcommit.Batcher[logAppend, error]
	// sso signs people in with an OpenID Connect provider; nil when not configured.
	sso *sso
	// secrets seals and opens xxl-job apps' access tokens.
	secrets *secret.Keyring
	// ops is the service layer the API and the console share.
	ops *Ops

	handlersMu sync.Mutex
	handlers   map[string]bool // names registered through Register

	running atomic.Bool
	// closing is closed when the HTTP server shuts down, so long-lived streams (output
	// follow) end instead of holding the shutdown up.
	closing   chan struct{}
	closeOnce sync.Once
	// executorStreams is closed when the HTTP side shuts down (not when the node stops:
	// executors deliver the results of runs the node handed them up their streams while it
	// drains, as they would POST them): the executor streams then end, and the executors
	// move to other nodes. The server's Shutdown does not see them (hijacked connections).
	executorStreams    chan struct{}
	executorStreamOnce sync.Once
}

// New builds a server around a new scheduler node; it registers the built-in handlers. The
// node does not run until Start (or Serve).
func New(cfg Config) (*Server, error) {
	sc, err := cfg.schedulerConfig()
	if err != nil {
		return nil, err
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	if cfg.ExecutorHeartbeat <= 0 {
		cfg.ExecutorHeartbeat = dispatch.DefaultHeartbeatInterval
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 30 * 24 * time.Hour
	}
	if cfg.AuditRetention <= 0 {
		cfg.AuditRetention = 365 * 24 * time.Hour
	}
	if cfg.ReportInterval <= 0 {
		cfg.ReportInterval = time.Minute
	}
	// The dispatcher is made before the scheduler, so it takes the clock the scheduler will
	// (sundial.New refuses the two fields set differently; neither set is the real clock).
	clk := sc.Clock
	if clk == nil {
		clk = sc.Engine.Clock
	}
	if sc.Secrets == nil && sc.Engine.Secrets == nil && cfg.SecretKey != "" {
		var err error
		if sc.Secrets, _, err = secret.FromFlag(cfg.SecretKey); err != nil {
			return nil, fmt.Errorf("server: secret key: %w", err)
		}
	}
	// One keyring seals secret params and xxl-job apps' tokens.
	secrets := sc.Secrets
	if secrets == nil {
		secrets = sc.Engine.Secrets
	}
	if cfg.XXLContextPath == "" {
		cfg.XXLContextPath = DefaultXXLContextPath
	}
	if !strings.HasPrefix(cfg.XXLContextPath, "/") {
		return nil, fmt.Errorf("server: XXL-JOB context path %q: want a path starting with /", cfg.XXLContextPath)
	}
	cfg.XXLContextPath = strings.TrimSuffix(cfg.XXLContextPath, "/")
	if cfg.ExecutorCA != nil && cfg.TLS == nil {
		return nil, errors.New("server: ExecutorCA (mutual TLS with executors) needs TLS, the server's own certificate")
	}
	var client *http.Client // dispatch's default without mutual TLS
	if cfg.ExecutorCA != nil || cfg.ExecutorTLS != nil {
		client = httpserve.Client(10*time.Second, cfg.ExecutorCA, cfg.ExecutorTLS)
	}
	remote := dispatch.NewRemote(dispatch.Config{Store: cfg.Store, Client: client,
		HeartbeatInterval: cfg.ExecutorHeartbeat, ExecutorWait: cfg.ExecutorWait, Logger: cfg.Logger, Clock: clk, Secrets: secrets,
		XXLLogInterval: cfg.XXLLogInterval})
	sc.Dispatcher = func(local engine.Dispatcher) engine.Dispatcher { return dispatch.ByTarget(local, remote) }
	sched, err := sundial.New(sc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	remote.RecordWith(sched.Engine().CompleteRemote)
	remote.SeesDatabaseWith(sched.Engine().SeesDatabaseFor)
	// A canceled or timed-out workflow run's nodes running on executors are killed there.
	sched.Engine().SetRemoteKiller(remote.KillExecution)
	clk = sched.Clock() // given in Config.Scheduler or its Engine
	s := &Server{cfg: cfg, store: cfg.Store, sched: sched, log: cfg.Logger, clock: clk, mux: http.NewServeMux(),
		closing: make(chan struct{}), executorStreams: make(chan struct{}), handlers: map[string]bool{}, remote: remote, secrets: secrets}
	cfg.Login = cfg.Login.withDefaults()
	if cfg.Login.PasswordCost < bcrypt.MinCost || cfg.Login.PasswordCost > bcrypt.MaxCost {
		return nil, fmt.Errorf("server: login password cost %d: want %d to %d", cfg.Login.PasswordCost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	s.cfg = cfg
	s.results = &groupcommit.Batcher[[]engine.RemoteResult, []int64]{Write: s.completeResults, Max: resultCalls}
	s.dispatchReads = &groupcommit.Batcher[[]int64, map[int64]*store.Dispatched]{Write: s.readDispatches, Max: resultCalls}
	s.logAppends = &groupcommit.Batcher[logAppend, error]{Write: s.appendLogs, Max: logCalls}
	if s.sso, err = newSSO(cfg.OIDC); err != nil {
		return nil, err
	}
	s.auth = &authenticator{store: cfg.Store, sessionTTL: cfg.SessionTTL, clock: clk, log: cfg.Logger, cost: cfg.Login.PasswordCost}
	s.metrics = newMetrics(sched.Engine(), remote.Stats())
	s.rejected = newRejectedCounter(s.metrics.reg)
	s.logins = newLoginLimiter(cfg.Login, clk.Now, s.metrics.reg)
	s.alarms, err = alarm.New(alarm.Config{Store: cfg.Store, SMTP: cfg.SMTP, Interval: cfg.AlarmInterval,
		Attempts: cfg.AlarmAttempts, Backoff: cfg.AlarmBackoff, Logger: cfg.Logger, Clock: clk, Secrets: secrets,
		PagerDutyURL: cfg.PagerDutyURL})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// The server's leader duties run on the node's duty roster, beside dead-node recovery.
	// Reports and retention keep the executor sweep's pace at the least.
	e := sched.Engine()
	sched.Maintenance().Add(
		maintenance.ExecutorSweep(e, cfg.Store, cfg.ExecutorHeartbeat, wire.IsStreamAddress, s.alarms.Wake, clk, cfg.Logger),
		maintenance.Reports(cfg.Store, s.ReportInterval(), clk, cfg.Logger),
		maintenance.Retention(cfg.Store, cfg.Retention, max(maintenance.RetentionInterval, cfg.ExecutorHeartbeat), clk, cfg.Logger),
		maintenance.HistoryPartitions(cfg.Store, maintenance.HistoryInterval, clk, cfg.Logger),
		maintenance.AuditRetention(cfg.Store, cfg.AuditRetention, max(maintenance.RetentionInterval, cfg.ExecutorHeartbeat), clk, cfg.Logger),
		s.alarms)
	s.registerBuiltins()
	s.ops = s.newOps()
	s.routes()
	s.xxlRoutes()
	s.handler = httpserve.Headers(cfg.TrustedProxies, s.instrument(s.mux))
	return s, nil
}

// schedulerConfig gives the scheduler the server's store and logger. Each is one setting:
// given here or in Config.Scheduler, and an error when given differently in both. The
// dispatcher is the server's (it sends remote jobs to executors), so the scheduler's must
// not be set.
func (cfg *Config) schedulerConfig() (sundial.Config, error) {
	sc := cfg.Scheduler
	if sc.Dispatcher != nil {
		return sc, errors.New("server: Config.Scheduler.Dispatcher: the server dispatches to in-process handlers and executors itself")
	}
	var errs [2]error
	sc.Store, errs[0] = setting.One("Config.Store", cfg.Store, "Config.Scheduler.Store", sc.Store)
	sc.Logger, errs[1] = setting.One("Config.Logger", cfg.Logger, "Config.Scheduler.Logger", sc.Logger)
	if err := errors.Join(errs[:]...); err != nil {
		return sc, fmt.Errorf("server: %w", err)
	}
	if sc.Store == nil {
		return sc, errors.New("server: Config.Store is required")
	}
	cfg.Store, cfg.Logger = sc.Store, sc.Logger
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return sc, nil
}

// Scheduler returns the node's scheduler, to register more handlers before Start.
func (s *Server) Scheduler() *sundial.Scheduler { return s.sched }

// Registry returns the Prometheus registry /metrics serves.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

// ReportInterval is how often the leader recounts the daily report (today's and
// yesterday's rows): how far the report's figures may lag the live ones.
func (s *Server) ReportInterval() time.Duration {
	return max(s.cfg.ReportInterval, s.cfg.ExecutorHeartbeat)
}

// Handler returns the HTTP handler of the whole server.
func (s *Server) Handler() http.Handler { return s.handler }

// Register makes h the handler of jobs whose handler is name, counting its runs in the
// metrics. Register before Start.
func (s *Server) Register(name string, h sundial.Handler) {
	s.handlersMu.Lock()
	s.handlers[name] = true
	s.handlersMu.Unlock()
	s.sched.Register(name, s.metrics.observe(h))
}

func (s *Server) handlerKnown(name string) bool {
	s.handlersMu.Lock()
	defer s.handlersMu.Unlock()
	return s.handlers[name]
}

// registerBuiltins registers the handlers every server has, so jobs can be run end to end
// before remote executors exist.
func (s *Server) registerBuiltins() {
	s.Register("noop", func(ctx context.Context) error {
		run := sundial.ExecutionFrom(ctx)
		sundial.Logger(ctx).Info("noop ran", "execution", run.ID, "attempt", run.Attempt)
		return nil
	})
}

// Start starts the scheduler node.
func (s *Server) Start(ctx context.Context) error {
	// The cluster key is read (made, on a new database) now rather than by the first
	// dispatch, whose job's timeout would pay for it.
	if _, err := s.remote.ClusterKeys(ctx); err != nil {
		return fmt.Errorf("server: the cluster key: %w", err)
	}
	if err := s.sched.Start(ctx); err != nil {
		return fmt.Errorf("server: start node: %w", err)
	}
	s.running.Store(true)
	return nil
}

// Stop stops the node, draining running handlers. Stop the HTTP side first.
func (s *Server) Stop(ctx context.Context) error {
	s.running.Store(false)
	s.closeStreams()
	err := s.sched.Stop(ctx) // stops the leader's duties first
	s.remote.Close()         // then the output followers of XXL-JOB runs: no dispatch starts one now
	return err
}

func (s *Server) closeStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// CloseExecutorStreams ends the executor streams this server holds, and refuses new ones. Serve
// calls it as its HTTP side shuts down; a program that serves Handler itself calls it when it
// shuts its HTTP server down.
func (s *Server) CloseExecutorStreams() {
	s.executorStreamOnce.Do(func() { close(s.executorStreams) })
}

// Serve starts the node (unless Start already ran), serves HTTP on ln until ctx is canceled,
// then shuts down in order: the HTTP server first (no new requests; open ones finish), then
// the node, which drains its running handlers.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.running.Load() {
		if err := s.Start(ctx); err != nil {
			ln.Close()
			return err
		}
	}
	hs := httpserve.NewServer(s.handler, s.cfg.HTTP, s.cfg.TLS, s.log)
	httpserve.ClientCerts(hs, s.cfg.ExecutorCA, false) // people on the same port have none
	hs.RegisterOnShutdown(s.closeStreams)
	hs.RegisterOnShutdown(s.CloseExecutorStreams)
	served := make(chan error, 1)
	go func() { served <- httpserve.Serve(hs, ln, s.cfg.HTTP) }()
	s.log.Info("serving", "addr", ln.Addr().String())

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	s.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown", "err", err)
	}
	// The drain has its own timeout (the scheduler's DrainTimeout).
	stopErr := s.Stop(context.Background())
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return errors.Join(serveErr, stopErr)
	}
	return stopErr
}
