package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/tracing/otlp"
)

type executorOptions struct {
	servers             []string
	token, app          string
	listen, advertise   string
	transport           string
	spoolDir            string
	enableShell         bool
	logFormat, logLevel string
	drainTimeout        time.Duration
	maxRuns             int
	tls                 tlsOptions
	tlsCA               string
	tokenFlag           *secretFlag
	otelEndpoint        string
	otelProtocol        string
}

// executorEnv names the environment variable of each flag that does not follow the
// SUNDIAL_<FLAG> rule: the token must not be confused with the CLI's API token (SUNDIAL_TOKEN).
var executorEnv = map[string]string{"token": "SUNDIAL_EXECUTOR_TOKEN",
	"otel-endpoint": "OTEL_EXPORTER_OTLP_ENDPOINT", "otel-protocol": "OTEL_EXPORTER_OTLP_PROTOCOL"}

func newExecutorCmd() *cobra.Command {
	var o executorOptions
	cmd := &cobra.Command{
		Use:   "executor",
		Short: "Run a stand-alone executor with the built-in handlers",
		Long: `Runs an executor: it registers with a Sundial server as a member of an app (executor group),
heartbeats, and runs the jobs the server sends it with the built-in handlers:

  http   params {"method":"POST","url":"https://…","headers":{…},"body":"…"}; succeeds on a 2xx
         answer; the status and the first lines of the body are the run's output. The request
         carries the run in headers: Sundial-Execution-Id, Sundial-Job-Id, Sundial-Trigger-Id,
         Sundial-Scheduled-At, Sundial-Fired-At, Sundial-Shard-Index, Sundial-Shard-Total,
         Sundial-Attempt and Idempotency-Key.
  shell  params: a script, run with /bin/sh -c; its output lines are streamed. Refused unless
         the executor was started with --enable-shell: whoever can create jobs could otherwise
         run commands on this machine. The script's environment carries the run:
         SUNDIAL_EXECUTION_ID, SUNDIAL_JOB_ID, SUNDIAL_TRIGGER_ID, SUNDIAL_SCHEDULED_AT and
         SUNDIAL_FIRED_AT (RFC 3339 with milliseconds, UTC), SUNDIAL_SHARD_INDEX,
         SUNDIAL_SHARD_TOTAL, SUNDIAL_ATTEMPT, and SUNDIAL_IDEMPOTENCY_KEY, the same for every
         retry of one fire (trigger, scheduled time, shard): a script can deduplicate on it.

--server may name several nodes of the cluster (repeated, or separated by commas): the
executor uses the one that answered last and moves to the next as soon as it does not answer,
so a node's stop costs no heartbeat and no result.

Results no server takes are kept in --spool-dir and delivered later, also after a
restart. SIGTERM or Ctrl-C unregisters, lets running jobs finish (up to --drain-timeout) and
stops.

Every flag can also be set by an environment variable: SUNDIAL_ and the flag's name in upper
case with _ for -, e.g. SUNDIAL_SERVER, SUNDIAL_APP; the token is SUNDIAL_EXECUTOR_TOKEN;
SUNDIAL_SERVERS (comma-separated) is read as well as SUNDIAL_SERVER. A flag on the command
line wins.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := flagsFromEnv(cmd.Flags(), executorEnv); err != nil {
				return err
			}
			if v, ok := os.LookupEnv("SUNDIAL_SERVERS"); ok && !cmd.Flags().Changed("server") {
				o.servers = append(o.servers, strings.Split(v, ",")...)
			}
			if err := o.tokenFlag.resolve(); err != nil {
				return err
			}
			return runExecutor(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.String("config", "", "YAML file of settings: the flags' names as keys, e.g. app: billing (default $SUNDIAL_CONFIG)")
	f.StringSliceVar(&o.servers, "server", nil, "base URL of a Sundial server node, e.g. http://sched:8080; repeat it or separate by commas for several (required)")
	o.tokenFlag = addSecretFlag(f, &o.token, "token", "SUNDIAL_EXECUTOR_TOKEN", "executor credential sent to the server: the app's (sundial app credential create) or the global --executor-token (required); the server never sends it back: its calls are signed", minSecretLen)
	o.tls.add(f)
	f.StringVar(&o.tlsCA, "tls-ca", "", "CA file (PEM) of the servers' certificates: turns on mutual TLS; the executor refuses "+
		"callers without a client certificate it signed, verifies the servers against it, and presents --tls-cert to them (needs --tls-cert)")
	f.StringVar(&o.app, "app", "", "app (executor group) to join (required)")
	f.StringVar(&o.transport, "transport", executor.TransportStream, "how the servers' calls reach the executor: stream (it dials each --server and holds a WebSocket open: no port to open, works behind NAT) or push (it listens on --listen and the servers call --advertise)")
	f.StringVar(&o.listen, "listen", ":9999", "address to listen on for the server's calls (--transport push)")
	f.StringVar(&o.advertise, "advertise", "", "URL the server calls this executor on (--transport push; default: derived from --listen)")
	f.StringVar(&o.spoolDir, "spool-dir", "", "directory for results not delivered yet (default: under the user cache directory)")
	f.BoolVar(&o.enableShell, "enable-shell", false, "allow the shell handler to run scripts")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.StringVar(&o.otelEndpoint, "otel-endpoint", "", "OTLP collector URL to export each run's span to, in the trace of its fire (default: no tracing)")
	f.StringVar(&o.otelProtocol, "otel-protocol", "", "OTLP protocol: http/protobuf (the default) or grpc")
	f.DurationVar(&o.drainTimeout, "drain-timeout", 30*time.Second, "how long stopping waits for running jobs")
	f.IntVar(&o.maxRuns, "max-runs", executor.DefaultMaxRuns, "most runs held at once (running or queued); past it a run is "+
		"answered busy and waits on the server for this or another executor (up to the job's dispatch timeout); -1: no bound")
	cmd.AddCommand(newExecutorListCmd())
	return cmd
}

// executorFlagsFromEnv sets every flag not given on the command line from its variable.
func runExecutor(ctx context.Context, stdout, stderr io.Writer, o executorOptions) error {
	for _, req := range []struct{ name, val, env string }{
		{"--server", strings.Join(o.servers, ""), "SUNDIAL_SERVER"}, {"--token", o.token, "SUNDIAL_EXECUTOR_TOKEN"}, {"--app", o.app, "SUNDIAL_APP"},
	} {
		if req.val == "" {
			return usageErrorf("%s (or %s) is required", req.name, req.env)
		}
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	certs, err := o.tls.load()
	if err != nil {
		return err
	}
	ca, err := loadCA("tls-ca", o.tlsCA)
	if err != nil {
		return err
	}
	if ca != nil && certs == nil {
		return usageErrorf("--tls-ca (mutual TLS) needs --tls-cert and --tls-key")
	}
	var tp trace.TracerProvider
	if o.otelEndpoint != "" {
		sdk, err := otlp.Provider(context.WithoutCancel(ctx), o.otelEndpoint, o.otelProtocol, "sundial-executor")
		if err != nil {
			return usageErrorf("--otel-endpoint: %v", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := sdk.Shutdown(sctx); err != nil {
				log.Warn("exporting the last traces failed", "err", err)
			}
		}()
		tp = sdk
	}
	ex, err := executor.New(executor.Config{Servers: o.servers, Token: o.token, App: o.app,
		Transport: o.transport, Listen: o.listen, Advertise: o.advertise, SpoolDir: o.spoolDir, Logger: log, TLS: certs, TLSCA: ca, TracerProvider: tp, MaxRuns: o.maxRuns})
	if err != nil {
		return usageError{err}
	}
	ex.Handle("http", builtin(httpHandler(nil)))
	ex.Handle("shell", builtin(shellHandler(o.enableShell)))

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := ex.Start(ctx); err != nil {
		return err
	}
	shell := map[bool]string{true: "enabled", false: "disabled"}[o.enableShell]
	if o.transport == executor.TransportPush {
		fmt.Fprintf(stdout, "Sundial executor %q is listening on %s (servers %s, shell %s)\n",
			o.app, ex.Address(), strings.Join(ex.Servers(), ", "), shell)
	} else {
		fmt.Fprintf(stdout, "Sundial executor %q is listening for runs on its streams to %s, as %s (shell %s)\n",
			o.app, strings.Join(ex.Servers(), ", "), ex.Address(), shell)
	}
	<-ctx.Done()
	stop() // a second signal now kills the process the default way
	drain, cancel := context.WithTimeout(context.Background(), o.drainTimeout)
	defer cancel()
	err = ex.Stop(drain)
	fmt.Fprintln(stdout, "Sundial executor stopped")
	return err
}
