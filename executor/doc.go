// Package executor is the executor SDK: it turns a Go program into a Sundial executor, a
// process that runs jobs the server dispatches to it.
//
// An executor registers its app name, handler names and address with a server node and
// repeats that registration as its heartbeat, naming its instance (the digest of a key pair
// it makes per process, proven on each request) and the runs it holds, so the server can
// tell a restarted executor from the old one and
// never declares lost a run its executor still has. Given several server nodes, it moves to
// the next as soon as one does not answer. It serves four calls from the server — run,
// kill, beat and idle-beat — runs each accepted run under the job's concurrency policy and
// timeout, streams the lines a handler logs through [Logger] to the server, and reports the
// result. By default (TransportStream) those calls come down a WebSocket the executor dials to
// each server node and holds open, in signed batches, and its own requests go up it: it
// listens on no port, so it works behind NAT and in containers the servers cannot reach;
// TransportPush makes it listen and the servers POST to it ("The stream" in
// docs/executor-protocol.md). The server's calls carry no credential: each is signed with the cluster key the
// server names in its answer to every registration, and the executor refuses one that is
// not, is replayed, altered, stale, or meant for another app, instance or address
// (docs/executor-protocol.md, "Signed calls"); each of its own requests carries the proof of
// its instance, a signature by a key the process makes at start ("Instance proof"). Results the server cannot take (it is down or restarting) wait in a spool
// directory (one file, with one fsync, for all those set aside at once), with the output lines
// the server did not take while their runs lasted, and are retried until delivered, also by the next executor
// process started on that directory. The wire format is described in docs/executor-protocol.md
// and by the types of package [github.com/sundial-scheduler/sundial/executor/wire].
//
//	ex, err := executor.New(executor.Config{Server: "http://sched:8080", Token: token, App: "billing"})
//	ex.Handle("report", func(ctx context.Context) error {
//		run, _ := executor.RunFrom(ctx)
//		executor.Logger(ctx).Info("building report", "params", run.Params)
//		return build(ctx, run.Params)
//	})
//	if err := ex.Start(ctx); err != nil { … }
//	defer ex.Stop(context.Background())
package executor
