package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/leaktest"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// crashScenario is the work a node holds when it dies: a long job that requests recovery
// (running) and a fast trigger whose next fires it has already acquired.
type crashScenario struct {
	slow, fast     *store.Job
	slowTr, fastTr *store.Trigger
	fastFirst      time.Time
	fastInterval   time.Duration
}

func setUpCrash(t *testing.T, st store.Store) crashScenario {
	now := time.Now()
	var sc crashScenario
	sc.slow = insertJob(t, st, "slow", func(j *store.Job) { j.RequestsRecovery = true; j.Handler = "block" })
	sc.fast = insertJob(t, st, "fast", nil)
	sc.slowTr = insertTrigger(t, st, sc.slow, "slow", schedule.Simple{}, now.Add(200*time.Millisecond), nil)
	sc.fastFirst = now.Add(time.Second)
	sc.fastInterval = 300 * time.Millisecond
	sc.fastTr = insertTrigger(t, st, sc.fast, "fast", schedule.Simple{Interval: sc.fastInterval, RepeatCount: 9}, sc.fastFirst, nil)
	return sc
}

// blockSlow makes the slow job's handler run until its context ends.
func blockSlow(ctx context.Context, f *Fire) Result {
	if f.Job.Handler == "block" && f.Execution.Cause != store.CauseRecovery {
		<-ctx.Done()
		return Result{Err: ctx.Err()}
	}
	return Result{}
}

// checkRecovered starts a survivor node and checks that it recovers the dead node's work:
// the slow job runs again with cause recovery at its original scheduled time, every fast fire
// runs exactly once (those the dead node had acquired included), and the dead node's running
// execution is recorded as lost.
func checkRecovered(t *testing.T, st store.Store, sc crashScenario, deadNode string, deadRuns map[fireKey]bool) {
	t.Helper()
	ctx := context.Background()
	rec := newRecorder()
	survivor := newEngine(t, st, rec, "survivor", clock.Real{}, nil)
	startEngine(t, survivor)
	recoverWhileLeading(t, survivor)

	// The leader lease of the dead node expires, the survivor leads and recovers it.
	got := waitFor(t, "recovery of the dead node", survivor.signals.recovered, 1)
	if got[0] != deadNode {
		t.Fatalf("recovered %q, want %q", got[0], deadNode)
	}
	fastKeys := map[fireKey]bool{}
	for i := 0; i < 10; i++ {
		fastKeys[fireKey{sc.fastTr.ID, ms(sc.fastFirst.Add(time.Duration(i) * sc.fastInterval))}] = true
	}
	// A fast fire the dead node claimed (moved to running) but died before its handler
	// reported is recorded lost: it may have run, and a job that does not request recovery
	// is not run again. It counts as the dead node's, and the survivor must not run it.
	lostFast, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: sc.fast.ID, State: store.ExecLost})
	if err != nil {
		t.Fatal(err)
	}
	claimedDead := map[fireKey]bool{}
	for _, x := range lostFast {
		k := fireKey{x.TriggerID, x.ScheduledAt}
		if x.Node != deadNode || !fastKeys[k] {
			t.Errorf("lost fast execution %d of %s on node %q: want only the dead node's scheduled fires", x.ID, describe(k), x.Node)
			continue
		}
		claimedDead[k] = true
		if !deadRuns[k] {
			t.Logf("%s: claimed by the dead node, killed before its handler reported; recorded lost", describe(k))
		}
	}
	// Wait for the recovery run of the slow job and every fast fire the dead node did not
	// start.
	want := 1
	for k := range fastKeys {
		if !deadRuns[k] && !claimedDead[k] {
			want++
		}
	}
	waitFor(t, "the survivor's fires", rec.started, want)

	var recovery *store.Execution
	rec.mu.Lock()
	for _, ex := range rec.execs {
		if ex.JobID == sc.slow.ID && ex.Cause == store.CauseRecovery {
			recovery = ex
		}
	}
	for k, nodes := range rec.runs {
		if deadRuns[k] || claimedDead[k] {
			t.Errorf("%s ran (or was claimed) on the dead node and again on %v", describe(k), nodes)
		}
		if len(nodes) > 1 {
			t.Errorf("%s ran %d times", describe(k), len(nodes))
		}
	}
	rec.mu.Unlock()
	if recovery == nil {
		t.Fatal("the slow job (requests recovery) was not run again with cause recovery")
	}
	if recovery.ScheduledAt != sc.slowTr.NextFireAt || recovery.Attempt != 1 {
		t.Errorf("recovery run: scheduled %d attempt %d, want the original %d and attempt 1",
			recovery.ScheduledAt, recovery.Attempt, sc.slowTr.NextFireAt)
	}
	for k := range fastKeys {
		if !deadRuns[k] && !claimedDead[k] && !rec.ran(k) {
			t.Errorf("%s never ran", describe(k))
		}
	}
	lost, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: sc.slow.ID, State: store.ExecLost})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0].Node != deadNode {
		t.Errorf("lost executions of the slow job: %+v, want one from %s", lost, deadNode)
	}
}

// TestCrashInProcess stops a node abruptly — no graceful stop, nothing written back — while it
// runs the slow job and holds acquired fast fires.
func TestCrashInProcess(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		st := openStore(t, dialect)
		sc := setUpCrash(t, st)
		_, deadRuns := crashVictim(t, st, sc, "victim")
		checkRecovered(t, st, sc, "victim", deadRuns)
	})
}

// crashVictim starts a node named node on the crash scenario, waits until it runs the slow
// job and holds acquired fast fires, and abandons it. It returns the life that crashed and the
// fires it ran.
func crashVictim(t *testing.T, st store.Store, sc crashScenario, node string) (store.Owner, map[fireKey]bool) {
	t.Helper()
	rec := newRecorder()
	rec.behave = blockSlow
	victim := newEngine(t, st, rec, node, clock.Real{}, func(c *Config) { c.LookAhead = 5 * time.Second })
	startEngine(t, victim)
	f := waitFor(t, "the slow job to start", rec.started, 1)[0]
	if f.Job.ID != sc.slow.ID {
		t.Fatalf("first fire is job %d, want the slow job %d", f.Job.ID, sc.slow.ID)
	}
	acquired, err := st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: sc.fast.ID, State: store.ExecAcquired})
	if err != nil {
		t.Fatal(err)
	}
	if len(acquired) == 0 {
		t.Fatal("the victim holds no acquired fast fires; the scenario proves nothing")
	}
	life := lifeOf(victim)
	victim.abandon()
	deadRuns := map[fireKey]bool{}
	for k := range rec.runs {
		deadRuns[k] = true
	}
	return life, deadRuns
}

// childEnv carries the DSN to a child test process that runs a victim node.
const childEnv = "SUNDIAL_ENGINE_CRASH_CHILD_DSN"

// TestCrashKilledProcess runs the victim node in a child process and kills it with SIGKILL.
func TestCrashKilledProcess(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		dsn := testdb.DSN(t, dialect)
		st, err := sqlstore.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		sc := setUpCrash(t, st)

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

		// The child reports each fire it starts; kill it once the slow job runs.
		deadRuns := map[fireKey]bool{}
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) == 4 && f[0] == "FIRE" {
				trig, _ := strconv.ParseInt(f[1], 10, 64)
				at, _ := strconv.ParseInt(f[2], 10, 64)
				deadRuns[fireKey{trig, at}] = true
				if f[3] == "block" {
					break
				}
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The child kept running until the kill landed: the fires it reported meanwhile ran
		// on it too. Read its output to the end (the pipe closes when it dies).
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) == 4 && f[0] == "FIRE" {
				trig, _ := strconv.ParseInt(f[1], 10, 64)
				at, _ := strconv.ParseInt(f[2], 10, 64)
				deadRuns[fireKey{trig, at}] = true
			}
		}
		_ = cmd.Wait()
		checkRecovered(t, st, sc, "child", deadRuns)
	})
}

// TestMain turns the test binary into the victim node of TestCrashKilledProcess when it
// runs as that test's child.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(childEnv); dsn != "" {
		runChildNode(dsn)
		return
	}
	leaktest.VerifyTestMain(m)
}

// runChildNode runs a node that reports each fire it starts on stdout, until it is killed.
func runChildNode(dsn string) {
	st, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	e, err := New(Config{Store: st, NodeID: "child", Dispatcher: childDispatcher{},
		PollInterval: 50 * time.Millisecond, LookAhead: 5 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, NodeTimeout: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	if err := e.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	select {} // until killed
}

type childDispatcher struct{}

func (childDispatcher) Dispatch(ctx context.Context, f *Fire) Result {
	if f.Execution.BackfillID != 0 {
		// A backfill's runs share no fire key: the ledger keys them by their interval.
		fmt.Printf("BACKFILL %d %s\n", f.Execution.IntervalEnd, f.Execution.Cause)
	}
	fmt.Printf("FIRE %d %d %s\n", f.Execution.TriggerID, f.Execution.ScheduledAt, f.Job.Handler)
	return blockSlow(ctx, f)
}
