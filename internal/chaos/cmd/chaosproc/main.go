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

func runNode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("node", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "HTTP address")
	db := fs.String("db", "", "database DSN")
	nodeID := fs.String("node-id", "", "node id")
	proc := fs.String("proc", "node", "process name in the ledger")
	ledger := fs.String("ledger", "", "ledger file")
	token := fs.String("executor-token", "chaos", "executor token")
	heartbeat := fs.Duration("heartbeat", 0, "node heartbeat interval (0: the default)")
	level := fs.String("log-level", "info", "log level")
	_ = fs.Parse(args)

	led, err := chaos.OpenLedger(*ledger)
	if err != nil {
		return err
	}
	defer led.Close()
	log := logger(*level)
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
	name := fmt.Sprintf("%s:%s:%d", *proc, *nodeID, os.Getpid())
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
	fs := flag.NewFlagSet("executor", flag.ExitOnError)
	servers := fs.String("server", "", "server base URL")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	app := fs.String("app", "chaos", "app")
	proc := fs.String("proc", "exec", "process name in the ledger")
	ledger := fs.String("ledger", "", "ledger file")
	token := fs.String("token", "chaos", "executor token")
	spool := fs.String("spool-dir", "", "spool directory")
	level := fs.String("log-level", "info", "log level")
	_ = fs.Parse(args)

	led, err := chaos.OpenLedger(*ledger)
	if err != nil {
		return err
	}
	defer led.Close()
	ex, err := executor.New(executor.Config{Server: *servers, Token: *token, App: *app, Listen: *listen,
		SpoolDir: *spool, Logger: logger(*level)})
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s::%d", *proc, os.Getpid())
	ex.Handle("ledger", func(ctx context.Context) error {
		r, _ := executor.RunFrom(ctx)
		return run(ctx, led, chaos.Entry{JobID: r.JobID, Sched: r.ScheduledAt.UnixMilli(), Attempt: r.Attempt,
			Shard: r.ShardIndex, ExecID: r.ExecutionID, Proc: name}, r.Params)
	})
	if err := ex.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return ex.Stop(drain)
}
