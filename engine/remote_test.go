package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRemoteCompletion hands fires to an "executor" (Dispatch returns Async) and reports their
// outcomes later through CompleteRemote: a failure is retried like an in-process one, a result
// reported twice changes nothing, and the execution stays running until its result arrives.
func TestRemoteCompletion(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		n := newFakeNode(t, dialect, func(context.Context, *Fire) Result { return Result{Async: true} })
		ctx := context.Background()
		job := insertJob(t, n.st, "remote", func(j *store.Job) { j.MaxRetries = 1; j.RetryBackoffMs = 1000 })
		insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()
		n.advance(time.Second)
		first := waitFor(t, "the fire to be handed over", n.rec.started, 1)[0].Execution

		if got := n.executions(job); len(got) != 1 || got[0].State != store.ExecRunning {
			t.Fatalf("before its result the execution is %v, want running", states(got))
		}
		failed := RemoteResult{ExecutionID: first.ID, State: store.ExecFailed, Code: 500, Message: "exit status 1",
			Started: t0.Add(time.Second), Finished: t0.Add(2 * time.Second), Logs: []string{"boom"}}
		done, err := n.e.CompleteRemote(ctx, []RemoteResult{failed})
		if err != nil || !slices.Equal(done, []int64{first.ID}) {
			t.Fatalf("CompleteRemote = %v, %v", done, err)
		}
		if again, err := n.e.CompleteRemote(ctx, []RemoteResult{failed}); err != nil || len(again) != 0 {
			t.Fatalf("a result reported twice completed %v (err %v)", again, err)
		}
		lines, err := n.st.ExecutionLogList(ctx, first.ID, 0, 10)
		if err != nil || len(lines) != 1 || lines[0].Message != "boom" {
			t.Fatalf("output of the remote run: %+v, %v", lines, err)
		}

		n.advance(2 * time.Second) // the retry, after its backoff
		retry := waitFor(t, "the retry to be handed over", n.rec.started, 1)[0].Execution
		if retry.Attempt != 1 || retry.Cause != store.CauseRetry {
			t.Fatalf("retry: attempt %d cause %s", retry.Attempt, retry.Cause)
		}
		if _, err := n.e.CompleteRemote(ctx, []RemoteResult{{ExecutionID: retry.ID, State: store.ExecSucceeded,
			Started: t0.Add(3 * time.Second), Finished: t0.Add(3 * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if got := states(n.executions(job)); !slices.Equal(got, []store.ExecutionState{store.ExecFailed, store.ExecSucceeded}) {
			t.Errorf("states %v, want failed then succeeded", got)
		}
		if _, err := n.e.CompleteRemote(ctx, []RemoteResult{{ExecutionID: retry.ID, State: store.ExecRunning}}); err == nil {
			t.Error("CompleteRemote accepted a non-final state")
		}
	})
}

// TestRemoteTimeoutIsTheExecutors: a remote job's timeout bounds its handler, which the
// executor runs and times out; the node's dispatch of it (the POST to the executor, however
// slow under load) is not the run, and a dispatch longer than the timeout still hands the run
// over rather than record it timed out before any handler ran.
func TestRemoteTimeoutIsTheExecutors(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		release := make(chan struct{})
		returned := make(chan error, 1)
		n := newFakeNode(t, dialect, func(ctx context.Context, _ *Fire) Result {
			select {
			case <-release: // the executor took it
			case <-ctx.Done():
			}
			returned <- context.Cause(ctx)
			if err := context.Cause(ctx); err != nil {
				return Result{Err: err}
			}
			return Result{Async: true}
		})
		job := insertJob(t, n.st, "remote", func(j *store.Job) {
			j.TargetKind, j.App, j.TimeoutMs = store.TargetRemote, "app", 100
		})
		insertTrigger(t, n.st, job, "once", schedule.Simple{}, t0.Add(time.Second), nil)
		n.start()
		n.advance(time.Second)
		waitFor(t, "the dispatch to begin", n.rec.started, 1)
		n.advance(time.Second) // ten timeouts into a slow dispatch
		close(release)
		if err := waitFor(t, "the dispatch to return", returned, 1)[0]; err != nil {
			t.Fatalf("the dispatch was canceled by the job's timeout: %v", err)
		}
		if got := n.executions(job); len(got) != 1 || got[0].State != store.ExecRunning {
			t.Fatalf("executions %v, want one running (handed to its executor)", states(got))
		}
	})
}
