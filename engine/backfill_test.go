package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// backfillJob stores a job with an hourly trigger started on 1 January 2026.
func backfillJob(t *testing.T, st store.Store, opts func(*store.Job)) (*store.Job, *store.Trigger) {
	t.Helper()
	hourly, err := schedule.ParseCron("0 0 * * * ?", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	job := insertJob(t, st, "backfilled", opts)
	// Paused, so that only the backfill runs the job: a backfill needs no live trigger.
	return job, insertTrigger(t, st, job, "hourly", hourly, utc("2026-01-01T00:00:00Z"), func(r *store.Trigger) {
		r.State = store.TriggerPaused
		r.Data = map[string]any{"region": "eu"} // a backfill's runs are the trigger's: they get its data
	})
}

// backfillRuns lists the backfill's executions, as "scheduled-interval start,end cause",
// ordered by interval end then id.
func backfillRuns(t *testing.T, st store.Store, job int64, backfill int64) []*store.Execution {
	t.Helper()
	execs, err := st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: job, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*store.Execution
	for _, x := range execs {
		if x.BackfillID == backfill {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b *store.Execution) int {
		if a.IntervalEnd != b.IntervalEnd {
			return int(a.IntervalEnd - b.IntervalEnd)
		}
		return int(a.ID - b.ID)
	})
	return out
}

func waitBackfill(t *testing.T, st store.Store, e *Engine, id int64, state store.BackfillState) *store.Backfill {
	t.Helper()
	for {
		b, err := st.BackfillGet(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if b.State == state {
			return b
		}
		waitFor(t, "a backfill round", e.signals.backfill, 1)
	}
}

// TestBackfillChunks plans a backfill of six hourly times in chunks of two (the dry run
// writes nothing), runs it, and checks each run's data interval and cause, on every database.
func TestBackfillChunks(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		job, row := backfillJob(t, st, nil)
		rec := newRecorder()
		regions := make(chan any, 16)
		rec.behave = func(ctx context.Context, f *Fire) Result { regions <- f.Job.Data["region"]; return Result{} }
		e := newEngine(t, st, rec, "node", clock.Real{}, nil)
		from, to := utc("2026-03-01T00:00:00Z"), utc("2026-03-01T05:00:00Z")

		plan, err := e.PlanBackfill(ctx, row, from, to, 2)
		if err != nil {
			t.Fatal(err)
		}
		var planned []string
		for _, r := range plan {
			planned = append(planned, hm(r.Start.UnixMilli())+"-"+hm(r.End.UnixMilli()))
		}
		want := []string{"23:00-01:00", "01:00-03:00", "03:00-05:00"}
		if !slices.Equal(planned, want) {
			t.Fatalf("planned %v, want %v", planned, want)
		}
		if bs, err := st.BackfillList(ctx, 0); err != nil || len(bs) != 0 {
			t.Fatalf("the dry run wrote %d backfills (%v)", len(bs), err)
		}

		startEngine(t, e)
		b, err := e.CreateBackfill(ctx, BackfillRequest{TriggerID: row.ID, From: from, To: to, Chunk: 2, MaxConcurrent: 2, CreatedBy: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if b.Total != 6 || b.State != store.BackfillRunning {
			t.Fatalf("stored backfill %+v, want 6 times, running", b)
		}
		done := waitBackfill(t, st, e, b.ID, store.BackfillDone)
		if done.Created != 6 || done.CursorAt != ms(to) {
			t.Errorf("done backfill created %d, cursor %s; want 6, %s", done.Created, hm(done.CursorAt), hm(ms(to)))
		}
		var got []string
		for _, x := range backfillRuns(t, st, job.ID, b.ID) {
			if x.Cause != store.CauseBackfill || x.State != store.ExecSucceeded {
				t.Errorf("run %d: cause %s, state %s", x.ID, x.Cause, x.State)
			}
			got = append(got, hm(x.IntervalStart)+"-"+hm(x.IntervalEnd))
		}
		if !slices.Equal(got, want) {
			t.Errorf("ran %v, want %v", got, want)
		}
		for range want {
			if r := <-regions; r != "eu" {
				t.Errorf("a run's data has region %v, want the trigger's eu", r)
			}
		}
	})
}

// TestBackfillConcurrencyAndCancel backfills ten hourly times with at most two runs at
// once: while two block, further rounds make no third; canceling then cancels nothing that
// runs, makes no more runs and ends the backfill canceled.
func TestBackfillConcurrencyAndCancel(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		job, row := backfillJob(t, st, nil)
		release := make(chan struct{})
		rec := newRecorder()
		rec.behave = func(ctx context.Context, f *Fire) Result {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Result{}
		}
		e := newEngine(t, st, rec, "node", clock.Real{}, nil)
		startEngine(t, e)
		b, err := e.CreateBackfill(ctx, BackfillRequest{TriggerID: row.ID, From: utc("2026-03-01T00:00:00Z"),
			To: utc("2026-03-01T09:00:00Z"), MaxConcurrent: 2})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "two runs to start", rec.started, 2)
		waitFor(t, "three more backfill rounds", e.signals.backfill, 3)
		if got, _ := st.BackfillGet(ctx, b.ID); got.Created != 2 {
			t.Fatalf("%d runs made while two ran, with at most 2 at once", got.Created)
		}
		if live, _ := st.ExecutionsLiveOfBackfill(ctx, b.ID); live != 2 {
			t.Fatalf("%d live runs, want 2", live)
		}
		canceled, err := e.CancelBackfill(ctx, b.ID)
		if err != nil || canceled.State != store.BackfillCanceled {
			t.Fatalf("cancel: %+v, %v", canceled, err)
		}
		close(release)
		for {
			if live, _ := st.ExecutionsLiveOfBackfill(ctx, b.ID); live == 0 {
				break
			}
			waitFor(t, "a run to end", e.signals.completed, 1)
		}
		// The acquisition loop runs the backfill round before each acquisition round.
		waitFor(t, "two more acquisition rounds", e.signals.acquired, 2)
		runs := backfillRuns(t, st, job.ID, b.ID)
		var got []string
		for _, x := range runs {
			got = append(got, hm(x.IntervalStart)+"-"+hm(x.IntervalEnd)+" "+string(x.State))
		}
		want := []string{"23:00-00:00 succeeded", "00:00-01:00 succeeded"}
		if !slices.Equal(got, want) {
			t.Errorf("runs %v, want %v", got, want)
		}
		if after, _ := st.BackfillGet(ctx, b.ID); after.State != store.BackfillCanceled || after.Created != 2 {
			t.Errorf("after cancel: %+v", after)
		}
	})
}

// TestBackfillNodeKilledMidway kills a node while it runs a backfill's first runs, restarts
// it under the same id and checks, with a ledger kept outside the database, that every
// scheduled time of the range ran exactly once as a backfill run (runs the dead node had
// started are recovered as recovery runs of the same interval), never more than the limit
// at once, on every database.
func TestBackfillNodeKilledMidway(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		st := openStore(t, dialect)
		job, row := backfillJob(t, st, func(j *store.Job) { j.RequestsRecovery = true })
		from, to := utc("2026-03-01T00:00:00Z"), utc("2026-03-01T11:00:00Z")

		var (
			mu sync.Mutex
			b  *store.Backfill
		)
		ledger := map[int64][]store.ExecutionCause{} // interval end -> causes of its runs
		record := func(f *Fire) {
			mu.Lock()
			defer mu.Unlock()
			if f.Execution.BackfillID != b.ID {
				t.Errorf("a run %d not of the backfill: %+v", f.Execution.ID, f.Execution)
			}
			ledger[f.Execution.IntervalEnd] = append(ledger[f.Execution.IntervalEnd], f.Execution.Cause)
		}
		victimRec := newRecorder()
		victimRec.behave = func(ctx context.Context, f *Fire) Result {
			record(f)
			<-ctx.Done() // the victim's runs never end: it dies with them
			return Result{Err: ctx.Err()}
		}
		victim := newEngine(t, st, victimRec, "victim", clock.Real{}, nil)
		startEngine(t, victim)
		mu.Lock()
		created, err := victim.CreateBackfill(ctx, BackfillRequest{TriggerID: row.ID, From: from, To: to, MaxConcurrent: 3})
		b = created
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the victim to start three runs", victimRec.started, 3)
		victim.abandon()

		rec := newRecorder()
		rec.behave = func(ctx context.Context, f *Fire) Result { record(f); return Result{} }
		restarted := newEngine(t, st, rec, "victim", clock.Real{}, nil)
		startEngine(t, restarted)
		waitBackfill(t, st, restarted, b.ID, store.BackfillDone)

		mu.Lock()
		defer mu.Unlock()
		recovered := 0
		for h := 0; h < 12; h++ {
			end := ms(from.Add(time.Duration(h) * time.Hour))
			causes := ledger[end]
			backfills := 0
			for _, c := range causes {
				switch c {
				case store.CauseBackfill:
					backfills++
				case store.CauseRecovery:
					recovered++
				default:
					t.Errorf("%s: a run of cause %s", hm(end), c)
				}
			}
			if backfills != 1 {
				t.Errorf("%s: %d backfill runs (%v), want exactly 1", hm(end), backfills, causes)
			}
		}
		if len(ledger) != 12 {
			var ends []string
			for end, causes := range ledger {
				ends = append(ends, fmt.Sprintf("%s=%v", time.UnixMilli(end).UTC().Format(time.RFC3339), causes))
			}
			t.Errorf("runs for %d scheduled times, want 12: %v", len(ledger), ends)
		}
		if recovered != 3 {
			t.Errorf("%d recovery runs, want the 3 the victim had started", recovered)
		}
		for _, x := range backfillRuns(t, st, job.ID, b.ID) {
			if x.IntervalEnd-x.IntervalStart != time.Hour.Milliseconds() {
				t.Errorf("run %d covers %s-%s, want one hour", x.ID, hm(x.IntervalStart), hm(x.IntervalEnd))
			}
		}
	})
}

// TestBackfillNodeKilledProcess runs a node in a child process on a backfill of twelve
// hourly times, three at once, whose runs block; it is killed with SIGKILL once it runs three,
// and a node restarted under its id finishes the backfill. The ledger, kept from the child's
// reports and the restarted node's runs, holds every time exactly once as a backfill run (the
// three the dead node held are recovered as recovery runs), on every database.
func TestBackfillNodeKilledProcess(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		dsn := testdb.DSN(t, dialect)
		st, err := sqlstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		_, row := backfillJob(t, st, func(j *store.Job) { j.RequestsRecovery = true; j.Handler = "block" })
		from := utc("2026-03-01T00:00:00Z")
		b := &store.Backfill{JobID: row.JobID, TriggerID: row.ID, FromAt: ms(from), ToAt: ms(from.Add(11 * time.Hour)),
			MaxConcurrent: 3, Chunk: 1, Total: 12}
		if err := st.BackfillInsert(ctx, b); err != nil {
			t.Fatal(err)
		}

		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dsn)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		ledger := map[int64][]string{} // interval end -> causes of its runs
		lines := bufio.NewScanner(out)
		for started := 0; started < 3 && lines.Scan(); {
			if f := strings.Fields(lines.Text()); len(f) == 3 && f[0] == "BACKFILL" {
				end, _ := strconv.ParseInt(f[1], 10, 64)
				ledger[end] = append(ledger[end], f[2])
				started++
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		var mu sync.Mutex
		rec := newRecorder()
		rec.behave = func(ctx context.Context, f *Fire) Result {
			mu.Lock()
			defer mu.Unlock()
			ledger[f.Execution.IntervalEnd] = append(ledger[f.Execution.IntervalEnd], string(f.Execution.Cause))
			return Result{}
		}
		restarted := newEngine(t, st, rec, "child", clock.Real{}, nil)
		startEngine(t, restarted)
		waitBackfill(t, st, restarted, b.ID, store.BackfillDone)

		mu.Lock()
		defer mu.Unlock()
		recovered := 0
		for h := 0; h < 12; h++ {
			end := ms(from.Add(time.Duration(h) * time.Hour))
			backfills := 0
			for _, c := range ledger[end] {
				switch store.ExecutionCause(c) {
				case store.CauseBackfill:
					backfills++
				case store.CauseRecovery:
					recovered++
				default:
					t.Errorf("%s: a run of cause %s", hm(end), c)
				}
			}
			if backfills != 1 {
				t.Errorf("%s: %d backfill runs (%v), want exactly 1", hm(end), backfills, ledger[end])
			}
		}
		if len(ledger) != 12 || recovered != 3 {
			t.Errorf("runs for %d times with %d recovery runs, want 12 and the 3 the killed node held", len(ledger), recovered)
		}
	})
}
