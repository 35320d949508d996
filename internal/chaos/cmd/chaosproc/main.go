// Command chaosproc is one process of the chaos suite's cluster: `chaosproc node` runs a
// scheduler node (server.New, the product's server with its REST and executor APIs) and
// `chaosproc executor` an executor (the executor SDK), each with the suite's "ledger" handler,
// which appends to the ledger file outside the database when a run begins and ends. The suite
// builds it with go build and runs it as separate processes it can kill, stop and restart.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/chaos"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chaosproc node|executor [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "node":
		err = runNode(ctx, os.Args[2:])
	case "executor":
		err = runExecutor(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want node or executor", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosproc:", err)
		os.Exit(1)
	}
}

// run is one run of the ledger handler: begin, work for the job's run time, end. A run that
// fails on purpose still writes its end, with OK false.
func run(ctx context.Context, led *chaos.Ledger, e chaos.Entry, params string) error {
	var p chaos.JobParams
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		return fmt.Errorf("ledger handler: params %q: %w", params, err)
	}
	e.Ev = "begin"
	if err := led.Append(e); err != nil {
		return err
	}
	select {
	case <-time.After(time.Duration(p.RunMs) * time.Millisecond):
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	e.Ev, e.OK = "end", !(e.Attempt == 0 && p.FailsFirst(e.Sched))
	if err := led.Append(e); err != nil {
		return err
	}
	if !e.OK {
		return errors.New("failed on purpose (the job's fail_pct)")
	}
	return nil
}

func logger(level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
}

// common are the flags of both commands.
type common struct {
	fs                  *flag.FlagSet
	proc, ledger, level *string
}

func newFlags(name string) common {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	return common{fs: fs, proc: fs.String("proc", name, "process name in the ledger"),
		ledger: fs.String("ledger", "", "ledger file"), level: fs.String("log-level", "info", "log level")}
}

// parse parses args and opens the ledger.
func (c common) parse(args []string) (*chaos.Ledger, *slog.Logger, error) {
	_ = c.fs.Parse(args)
	led, err := chaos.OpenLedger(*c.ledger)
	return led, logger(*c.level), err
}

func runNode(ctx context.Context, args []string) error {
	c := newFlags("node")
	addr := c.fs.String("addr", "127.0.0.1:0", "HTTP address")
	db := c.fs.String("db", "", "database DSN")
	nodeID := c.fs.String("node-id", "", "node id")
	token := c.fs.String("executor-token", "chaos", "executor token")
	heartbeat := c.fs.Duration("heartbeat", 0, "node heartbeat interval (0: the default)")
	led, log, err := c.parse(args)
	if err != nil {
		return err
	}
	defer led.Close()
	st, err := sqlstore.Open(ctx, *db)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := server.New(server.Config{Store: st, Logger: log, ExecutorToken: *token,
		Scheduler: sundial.Config{NodeID: *nodeID, HeartbeatInterval: *heartbeat, DrainTimeout: 5 * time.Second}})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s:%s:%d", *c.proc, *nodeID, os.Getpid())
	srv.Register("ledger", func(ctx context.Context) error {
		ex := sundial.ExecutionFrom(ctx)
		return run(ctx, led, chaos.Entry{JobID: ex.JobID, Sched: ex.ScheduledAt.UnixMilli(), Attempt: ex.Attempt,
			ExecID: ex.ID, Proc: name}, ex.Params)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}

func runExecutor(ctx context.Context, args []string) error {
	c := newFlags("exec")
	servers := c.fs.String("server", "", "server base URLs, comma-separated (the executor fails over between them)")
	listen := c.fs.String("listen", "127.0.0.1:0", "listen address (push transport)")
	transport := c.fs.String("transport", executor.TransportStream, "stream or push")
	app := c.fs.String("app", "chaos", "app")
	token := c.fs.String("token", "chaos", "executor token")
	spool := c.fs.String("spool-dir", "", "spool directory")
	led, log, err := c.parse(args)
	if err != nil {
		return err
	}
	defer led.Close()
	ex, err := executor.New(executor.Config{Servers: strings.Split(*servers, ","), Token: *token, App: *app, Listen: *listen,
		Transport: *transport, SpoolDir: *spool, Logger: log})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s::%d", *c.proc, os.Getpid())
	ex.Handle("ledger", func(ctx context.Context) error {
		r, _ := executor.RunFrom(ctx)
		return run(ctx, led, chaos.Entry{JobID: r.JobID, Sched: r.ScheduledAt.UnixMilli(), Attempt: r.Attempt,
			Shard: r.ShardIndex, ExecID: r.ExecutionID, Proc: name}, r.Params)
	})
	if err := ex.Start(ctx); err != nil {
		return err
	}
	fmt.Println(chaos.ExecutorUp)
	<-ctx.Done()
	drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return ex.Stop(drain)
}
