package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/dsn"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/internal/tracing/otlp"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/web"
)

type serverOptions struct {
	addr, db, nodeID, admin string
	dbMaxConns              int
	executorToken           string
	logFormat, logLevel     string
	drainTimeout            time.Duration
	executorWait            time.Duration
	retention               time.Duration
	auditRetention          time.Duration
	noMigrate               bool
	smtp                    alarm.SMTP
	pagerDutyURL            string
	tls                     tlsOptions
	executorTLS             executorTLSOptions
	trustedProxies          string
	executorNetworks        string
	minInterval             time.Duration
	maxJobsPerApp           int
	maxFiresPerApp          int
	oidc                    server.OIDCConfig
	oidcRoleMap             string
	otelEndpoint            string
	otelProtocol            string
	secrets                 []*secretFlag
	secretKey               string
	xxlContextPath          string
}

// serverEnv names the environment variables of the server's flags that are not
// SUNDIAL_<FLAG>: OpenTelemetry's own.
var serverEnv = map[string]string{"otel-endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT", "otel-protocol": "OTEL_EXPORTER_OTLP_PROTOCOL"}

func newServerCmd() *cobra.Command {
	var o serverOptions
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a scheduler node with the REST API",
		Long: `Runs one Sundial node: the scheduling engine and the REST API (/api/v1), metrics (/metrics)
and health checks (/healthz, /readyz) on one port. Every node that opens the same PostgreSQL or
MySQL/MariaDB database joins the cluster. The first start on a database creates the admin user
and prints its password once.

Every flag can also be set by an environment variable: SUNDIAL_ and the flag's name in upper
case with _ for -, e.g. SUNDIAL_DB, SUNDIAL_ADDR, or in a YAML file given by --config with the
flags' names as keys (db: …, node-id: …). A flag on the command line wins over the
environment, which wins over the file. --otel-endpoint and --otel-protocol read
OpenTelemetry's own variables, OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flagsFromEnv(cmd.Flags(), serverEnv); err != nil {
				return err
			}
			for _, s := range o.secrets {
				if err := s.resolve(); err != nil {
					return err
				}
			}
			return runServer(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.String("config", "", "YAML file of settings: the flags' names as keys, e.g. db: postgres://… (default $SUNDIAL_CONFIG)")
	f.StringVar(&o.addr, "addr", ":8080", "address to listen on")
	f.StringVar(&o.db, "db", "sundial.db", "database: a SQLite path, postgres://… or mysql://user@tcp(host:3306)/db")
	f.IntVar(&o.dbMaxConns, "db-max-conns", sqlstore.DefaultMaxConns,
		"connections this node opens to a PostgreSQL or MySQL database at most (SQLite uses one); a node's loops use about six, the rest serve the API")
	f.StringVar(&o.nodeID, "node-id", "", "this node's name in the cluster (default: hostname-pid-random)")
	f.BoolVar(&o.noMigrate, "no-migrate", false, "do not migrate the database on start; refuse to start if it lacks migrations (see sundial migrate)")
	f.StringVar(&o.admin, "admin", "admin", "name of the admin user created on the first start")
	o.secrets = append(o.secrets, addSecretFlag(f, &o.executorToken, "executor-token", "SUNDIAL_EXECUTOR_TOKEN",
		"global secret executors of any app may present (deprecated: prefer per-app credentials, sundial app credential create; none: only those)", minSecretLen),
		addSecretFlag(f, &o.smtp.Password, "smtp-password", "SUNDIAL_SMTP_PASSWORD", "SMTP password", 0),
		addSecretFlag(f, &o.secretKey, "secret-key", "SUNDIAL_SECRET_KEY",
			"key sealing the secrets the server must read back (secret job params, xxl-job apps' access tokens); the same on every node. "+
				"id:base64-of-32-bytes[,id:…] is a keyring whose first key seals and all open (rotate: add the new key second, then first); "+
				"anything else is a passphrase (no rotation)", minSecretLen))
	f.StringVar(&o.xxlContextPath, "xxl-context-path", server.DefaultXXLContextPath,
		"path the XXL-JOB admin API (/api/registry, /api/callback) is served under, besides at /")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 30*time.Second, "how long shutdown waits for running handlers")
	f.DurationVar(&o.executorWait, "executor-wait", dispatch.DefaultExecutorWait, "how long a fire with no executor of its app online waits for one before it fails")
	f.DurationVar(&o.retention, "retention", 30*24*time.Hour, "how long finished executions and their output are kept")
	f.DurationVar(&o.auditRetention, "audit-retention", 365*24*time.Hour, "how long audit log entries are kept (apart from --retention)")
	f.StringVar(&o.smtp.Addr, "smtp-addr", "", "SMTP server (host:port) for e-mail alarms (none: e-mail alarms fail; webhooks work)")
	f.StringVar(&o.smtp.From, "smtp-from", "", "sender address of e-mail alarms (required with --smtp-addr)")
	f.StringVar(&o.pagerDutyURL, "pagerduty-url", "", "PagerDuty Events API v2 URL for pagerduty: alarm targets (default "+
		alarm.PagerDutyEventsURL+"; EU accounts: https://events.eu.pagerduty.com/v2/enqueue)")
	f.StringVar(&o.smtp.User, "smtp-user", "", "SMTP user (PLAIN authentication, over TLS unless the server is localhost)")
	o.tls.add(f)
	o.executorTLS.add(f)
	f.StringVar(&o.executorNetworks, "executor-networks", "", "CIDRs manual executor addresses must be in (comma-separated; default: anywhere)")
	f.StringVar(&o.trustedProxies, "trusted-proxy", "", "CIDRs of TLS-terminating proxies whose X-Forwarded-Proto is believed (comma-separated)")
	f.DurationVar(&o.minInterval, "min-interval", time.Second, "shortest time allowed between two fires of one trigger (0: no limit)")
	f.IntVar(&o.maxJobsPerApp, "max-jobs-per-app", 10000, "most jobs one app (executor group) may have (0: no limit)")
	f.StringVar(&o.oidc.Issuer, "oidc-issuer", "", "OpenID Connect issuer URL: turns on single sign-on (\"Sign in with SSO\" in the console)")
	f.StringVar(&o.oidc.ClientID, "oidc-client-id", "", "this server's client id at the OpenID Connect provider")
	o.secrets = append(o.secrets, addSecretFlag(f, &o.oidc.ClientSecret, "oidc-client-secret", "SUNDIAL_OIDC_CLIENT_SECRET",
		"OIDC client secret of this server", 0))
	f.StringVar(&o.oidc.RedirectURL, "oidc-redirect-url", "", "this server's sign-in callback as registered at the provider: https://HOST/api/v1/auth/sso/callback")
	f.StringVar(&o.oidc.GroupsClaim, "oidc-groups-claim", "groups", "ID token claim that lists the user's groups")
	f.StringVar(&o.oidcRoleMap, "oidc-role-map", "", "provider groups to role and app scope: 'ops=operator:app1,app2;admins=admin;staff=viewer' (a user in no mapped group is refused)")
	f.IntVar(&o.maxFiresPerApp, "max-fires-per-app", 0, "most fires of one app the cluster starts per second (give every node the same); more are delayed, never dropped (0: no limit)")
	f.StringVar(&o.otelEndpoint, "otel-endpoint", "", "OTLP collector URL to export a trace of every fire to, e.g. http://collector:4318 (default: no tracing)")
	f.StringVar(&o.otelProtocol, "otel-protocol", "", "OTLP protocol: http/protobuf (the default) or grpc")
	return cmd
}

// flagsFromEnv sets every flag not given on the command line from SUNDIAL_<NAME>, or from
// the variable overrides names for it, and then, for a command with --config, from the
// config file's setting of the same name: a flag wins over the environment, which wins over
// the file.
func flagsFromEnv(fs *pflag.FlagSet, overrides map[string]string) error {
	var file map[string]string
	if cf := fs.Lookup("config"); cf != nil {
		path := cf.Value.String()
		if v, ok := os.LookupEnv("SUNDIAL_CONFIG"); ok && !cf.Changed {
			path = v
		}
		if path != "" {
			var err error
			if file, err = readConfig(path, fs, overrides); err != nil {
				return err
			}
		}
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil || f.Name == "config" {
			return
		}
		env := envName(f.Name, overrides)
		if v, ok := os.LookupEnv(env); ok {
			if e := f.Value.Set(v); e != nil {
				err = usageErrorf("%s=%q: %v", env, v, e)
			}
		} else if v, ok := file[f.Name]; ok {
			if e := f.Value.Set(v); e != nil {
				err = usageErrorf("--config: %s: %q: %v", f.Name, v, e)
			}
		}
	})
	return err
}

// envName is the environment variable of a flag.
func envName(flag string, overrides map[string]string) string {
	if env, ok := overrides[flag]; ok {
		return env
	}
	return "SUNDIAL_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", format)
}

func runServer(ctx context.Context, stdout, stderr io.Writer, o serverOptions) error {
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	proxies, err := httpserve.ParseProxies(o.trustedProxies)
	if err != nil {
		return usageErrorf("--trusted-proxy: %v", err)
	}
	execNets, err := httpserve.ParseProxies(o.executorNetworks)
	if err != nil {
		return usageErrorf("--executor-networks: %v", err)
	}
	if o.smtp.Addr != "" && o.smtp.From == "" {
		return usageErrorf("--smtp-addr %s needs --smtp-from (the sender address of alarms)", o.smtp.Addr)
	}
	if o.dbMaxConns < 1 {
		return usageErrorf("--db-max-conns %d: want at least 1", o.dbMaxConns)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// The port first: a server that cannot bind must not have created its database, nor shown
	// an admin password for a server that never started.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	defer ln.Close() // on an early return; Serve closes it otherwise
	st, err := sqlstore.Open(ctx, o.db, sqlstore.WithMaxConns(o.dbMaxConns))
	if err != nil {
		return err
	}
	defer st.Close()
	if o.noMigrate {
		// The operator migrates (sundial migrate up) before rolling nodes out: a node whose
		// schema is behind would fail on its first statement that needs a newer one.
		if n, err := pendingMigrations(ctx, st); err != nil {
			return err
		} else if n > 0 {
			return fmt.Errorf("the database %s lacks %d migrations of this version: run 'sundial migrate up' (or start without --no-migrate)", dsn.Redact(o.db), n)
		}
	} else if err := st.Migrate(ctx); err != nil {
		return err
	}
	password, created, err := server.EnsureAdmin(ctx, st, o.admin)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdout, "Created the admin user %q with the password:\n\n    %s\n\n"+
			"It is shown only this once. Log in with it (POST /api/v1/auth/login) and create an API token\n"+
			"(POST /api/v1/tokens), or change it (POST /api/v1/auth/password).\n", o.admin, password)
	}
	certs, err := o.tls.load()
	if err != nil {
		return err
	}
	var oidcCfg *server.OIDCConfig
	if o.oidc.Issuer != "" {
		rules, err := server.ParseOIDCRoleMap(o.oidcRoleMap)
		if err != nil {
			return usageErrorf("--oidc-role-map: %v", err)
		}
		oidcCfg = &o.oidc
		oidcCfg.RoleMap = rules
		if o.oidc.ClientID == "" || o.oidc.RedirectURL == "" {
			return usageErrorf("--oidc-issuer needs --oidc-client-id and --oidc-redirect-url")
		}
	}
	execCert, execCA, err := o.executorTLS.load()
	if err != nil {
		return err
	}
	if execCA != nil && certs == nil {
		return usageErrorf("--executor-tls-ca (mutual TLS with executors) needs --tls-cert and --tls-key")
	}
	keys, derived, err := secret.FromFlag(o.secretKey)
	if err != nil {
		return usageErrorf("--secret-key: %v", err)
	}
	if keys != nil {
		if derived {
			log.Info("--secret-key is a passphrase: secret params are sealed under one key derived from it (give id:base64 keys to rotate)")
		}
		// A rotation (a new key put first) takes effect for stored secrets here.
		n, unopened, err := sundial.ResealSecrets(ctx, st, keys)
		if err != nil {
			return err
		}
		if n > 0 || unopened > 0 {
			log.Info("secret params resealed under the primary key", "key", keys.Primary(), "resealed", n, "unopened", unopened)
		}
		if unopened > 0 {
			log.Warn("some secret params are sealed under a key --secret-key lacks: their fires fail until it is given", "jobs", unopened)
		}
	}
	var tracer trace.TracerProvider
	if o.otelEndpoint != "" {
		tp, err := otlp.Provider(ctx, o.otelEndpoint, o.otelProtocol, "sundial")
		if err != nil {
			return usageErrorf("--otel-endpoint: %v", err)
		}
		tracer = tp
		defer func() {
			// The spans of the last fires go out before the process ends.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("exporting the last traces failed", "err", err)
			}
		}()
		log.Info("tracing fires", "otlp_endpoint", o.otelEndpoint)
	}
	srv, err := server.New(server.Config{Store: st, Logger: log, ExecutorToken: o.executorToken, Retention: o.retention,
		ExecutorWait: o.executorWait, ExecutorTLS: execCert, ExecutorCA: execCA,
		AuditRetention: o.auditRetention, ExecutorNetworks: execNets,
		SMTP: o.smtp, PagerDutyURL: o.pagerDutyURL, Scheduler: sundial.Config{NodeID: o.nodeID, DrainTimeout: o.drainTimeout, MinInterval: o.minInterval,
			Secrets: keys, Engine: engine.Config{AppFiresPerSecond: o.maxFiresPerApp, TracerProvider: tracer}},
		TLS: certs, TrustedProxies: proxies, Input: server.InputLimits{MaxJobsPerApp: o.maxJobsPerApp},
		OIDC: oidcCfg, SecretKey: o.secretKey, XXLContextPath: o.xxlContextPath})
	if err != nil {
		return err
	}
	if err := web.Mount(srv, web.Config{Logger: log}); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	// The node starts before the banner, and a signal during its start waits for it: whoever
	// reads "listening" may stop the server at once.
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	pool := ""
	if n := st.DB().Stats().MaxOpenConnections; n > 1 {
		pool = fmt.Sprintf(", at most %d connections", n)
	}
	fmt.Fprintf(stdout, "Sundial is listening on %s://%s (database %s%s)\n", o.tls.scheme(), ln.Addr(), dsn.Redact(o.db), pool)
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Sundial stopped")
	return nil
}
