package server

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/store"
)

// mapLedger is kept outside the database by the handlers of TestExecutorMapReduce: every
// run of a task (by sub-task id, with the executor that ran it) and every id a report had
// accepted.
type mapLedger struct {
	mu        sync.Mutex
	runs      map[int64][]string
	failed    map[int64][]string // the errors a run returned, by sub-task
	accepted  map[int64]int
	limitSeen int
	reduces   int
	sum       int
}

func (l *mapLedger) ran(id int64, who string) {
	l.mu.Lock()
	l.runs[id] = append(l.runs[id], who)
	l.mu.Unlock()
}

func (l *mapLedger) accept(ids []int64) {
	l.mu.Lock()
	for _, id := range ids {
		l.accepted[id]++
	}
	l.mu.Unlock()
}

// fanOut is the MapReduce of the tests: Start maps n payloads; every tenth task maps two more
// (depth 2), whose own Map is past the server's MaxDepth of 2; task 7 fails its first attempt;
// Reduce sums the values and sets the sum as the run's result.
func fanOut(l *mapLedger, who string, n int) executor.MapReduce {
	return executor.MapReduce{
		Start: func(ctx context.Context) error {
			ps := make([]json.RawMessage, n)
			for i := range ps {
				ps[i] = json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
			}
			return executor.Map(ctx, ps)
		},
		Task: func(ctx context.Context, payload json.RawMessage) (out json.RawMessage, err error) {
			st := executor.SubtaskFrom(ctx)
			l.ran(st.ID, who)
			defer func() {
				if err != nil {
					l.mu.Lock()
					l.failed[st.ID] = append(l.failed[st.ID], err.Error())
					l.mu.Unlock()
				}
			}()
			var p struct{ N int }
			if err := json.Unmarshal(payload, &p); err != nil {
				return nil, err
			}
			switch {
			case st.Depth == 1 && p.N%10 == 0:
				if err := executor.Map(ctx, []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"n":%d}`, 1000+p.N)), json.RawMessage(fmt.Sprintf(`{"n":%d}`, 2000+p.N))}); err != nil {
					return nil, err
				}
			case st.Depth == 2:
				err := executor.Map(ctx, []json.RawMessage{json.RawMessage(`{"n":0}`)})
				if !errors.Is(err, executor.ErrMapLimit) {
					return nil, fmt.Errorf("map at depth 3: %v, want ErrMapLimit", err)
				}
				l.mu.Lock()
				l.limitSeen++
				l.mu.Unlock()
			case p.N == 7 && st.Attempt == 1:
				return nil, errors.New("task 7 fails its first attempt")
			}
			return json.RawMessage(fmt.Sprintf(`{"v":%d}`, p.N)), nil
		},
		Reduce: func(ctx context.Context, rs *executor.MapResults) error {
			sum, count := 0, 0
			err := rs.Each(ctx, func(r executor.SubtaskResult) error {
				if r.Failed {
					return fmt.Errorf("sub-task %d failed: %s", r.ID, r.Message)
				}
				var v struct{ V int }
				if err := json.Unmarshal(r.Result, &v); err != nil {
					return err
				}
				sum += v.V
				count++
				return nil
			})
			if err != nil {
				return err
			}
			l.mu.Lock()
			l.reduces++
			l.sum = sum
			l.mu.Unlock()
			return executor.SetResult(ctx, map[string]int{"sum": sum, "count": count})
		},
	}
}

// mapExecutor starts an SDK executor of billing on transport that registers fan as name.
func (e *env) mapExecutor(transport string, l *mapLedger, who string, n int) *executor.Executor {
	e.t.Helper()
	cfg := executor.Config{Server: e.url, Token: execToken, App: "billing", Transport: transport, SpoolDir: e.t.TempDir(),
		Map: executor.MapConfig{Workers: 8, Batch: 8, PollInterval: 50 * time.Millisecond, Accepted: l.accept}}
	if transport == executor.TransportPush {
		cfg.Listen = "127.0.0.1:0"
	}
	ex, err := executor.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ex.HandleMapReduce("fan", fanOut(l, who, n))
	if err := ex.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex
}

// TestExecutorMapReduce: a remote MapReduce handler maps 200 sub-tasks from its Start, every
// tenth maps two more, a map past the depth limit is ErrMapLimit, one task is retried; two
// SDK executors (one streamed, one pushed to) share the sub-tasks, and the Reduce of one of
// them completes the run. The ledger shows each sub-task's result accepted exactly once and
// each run once (task 7 twice: its retry).
func TestExecutorMapReduce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, dialect, func(c *Config) {
			c.ExecutorToken = execToken
			c.ExecutorHeartbeat = time.Second
			c.Scheduler.HeartbeatInterval = 200 * time.Millisecond
			c.Scheduler.MapReduce.MaxDepth = 2
		})
		const n = 200
		l := &mapLedger{runs: map[int64][]string{}, failed: map[int64][]string{}, accepted: map[int64]int{}}
		e.mapExecutor(executor.TransportStream, l, "stream", n)
		e.mapExecutor(executor.TransportPush, l, "push", n)
		job := e.remoteJob("billing", "round_robin", func(j *store.Job) { j.Handler = "fan"; j.MaxRetries = 2 })
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		run := e.onlyRunSucceeded(job)

		const total = n + 2*n/10
		want := 0
		for i := range n {
			want += i
			if i%10 == 0 {
				want += 1000 + i + 2000 + i
			}
		}
		var page api.SubtaskPage
		e.call("GET", "/api/v1/executions/"+itoa(run.ID)+"/subtasks?limit=1", nil, 200, &page)
		if page.Counts[store.SubtaskSucceeded] != total || len(page.Counts) != 1 {
			t.Errorf("counts %v, want %d succeeded", page.Counts, total)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.accepted) != total {
			t.Errorf("%d sub-tasks accepted, want %d", len(l.accepted), total)
		}
		twice := 0
		by := map[string]int{}
		for id, k := range l.accepted {
			// One outcome accepted per attempt: the retried task's failure and its success.
			if k != len(l.runs[id]) {
				t.Errorf("sub-task %d: %d outcomes accepted, %d runs", id, k, len(l.runs[id]))
			}
			// A sub-task runs again only after a failed attempt: task 7's planned one, or a
			// Map call of a task that failed (a database error under load), retried per the
			// job's max_retries.
			if len(l.runs[id]) != 1 {
				twice++
				if len(l.failed[id]) != len(l.runs[id])-1 {
					t.Errorf("sub-task %d ran %d times after %d failures", id, len(l.runs[id]), len(l.failed[id]))
				}
				if id != 8 {
					t.Logf("sub-task %d retried after %v", id, l.failed[id])
				}
			}
			for _, who := range l.runs[id] {
				by[who]++
			}
		}
		if twice < 1 || len(l.failed) != twice {
			t.Errorf("%d sub-tasks ran more than once, %d failed an attempt; want task 7's retry at least, and no run again without a failure", twice, len(l.failed))
		}
		if by["stream"] == 0 || by["push"] == 0 {
			t.Errorf("runs by executor %v: want both to run sub-tasks", by)
		}
		if l.sum != want {
			t.Errorf("reduced the sum %d, want %d", l.sum, want)
		}
		if l.limitSeen != 2*n/10 || l.reduces != 1 {
			t.Errorf("%d maps past the limit (want %d), %d reduces (want 1)", l.limitSeen, 2*n/10, l.reduces)
		}
	})
}

// TestExecutorMapReduceTrust: app payroll's credential, with a proven instance of its own,
// cannot map into, claim, report, read or reduce billing's sub-tasks; another instance of
// billing cannot report attempts it does not hold or read a map it does not reduce.
func TestExecutorMapReduceTrust(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e, id := trustEnv(t, dialect)
		var payroll api.AppCredential
		e.call("POST", "/api/v1/apps/payroll/credentials", nil, 201, &payroll)
		billing1, billing2, pay := sender{"billing", inst("i1")}, sender{"billing", inst("i2")}, sender{"payroll", inst("p1")}
		path := func(full string) string { return full[len("/api/v1/executor/"):] }
		payloads := []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`2`), json.RawMessage(`3`)}

		e.executorWith(payroll.Secret, pay, path(api.PathSubtasksMap), api.MapRequest{ExecutionID: id, Payloads: payloads}, 403, nil)
		// Only the instance the run was handed to maps from its Start.
		e.executorAs(billing2, path(api.PathSubtasksMap), api.MapRequest{ExecutionID: id, Payloads: payloads}, 409, nil)
		var added api.MapResponse
		e.executorAs(billing1, path(api.PathSubtasksMap), api.MapRequest{ExecutionID: id, Payloads: payloads}, 200, &added)
		if added.Added != 3 {
			t.Fatalf("added %d, want 3", added.Added)
		}
		var claimed api.ClaimResponse
		e.executorWith(payroll.Secret, pay, path(api.PathSubtasksClaim), api.ClaimRequest{Handlers: []string{"report"}, Limit: 10, Maps: 10}, 200, &claimed)
		if len(claimed.Subtasks)+len(claimed.Maps) != 0 {
			t.Fatalf("payroll claimed billing's %+v", claimed)
		}
		e.executorAs(billing2, path(api.PathSubtasksClaim), api.ClaimRequest{Handlers: []string{"report"}, Limit: 10}, 200, &claimed)
		if len(claimed.Subtasks) != 3 {
			t.Fatalf("billing claimed %+v, want 3 sub-tasks", claimed)
		}
		st := claimed.Subtasks[0]
		outcomes := make([]api.SubtaskOutcome, len(claimed.Subtasks))
		for i, c := range claimed.Subtasks {
			outcomes[i] = api.SubtaskOutcome{ID: c.ID, Attempt: c.Attempt, State: "succeeded", Result: json.RawMessage(`{"forged":true}`)}
		}
		var acc api.SubtaskAccepted
		for _, who := range []struct {
			token string
			from  sender
		}{{payroll.Secret, pay}, {execToken, billing1}} {
			e.executorWith(who.token, who.from, path(api.PathSubtasksResults), api.SubtaskResults{Results: outcomes}, 200, &acc)
			if len(acc.Accepted) != 0 {
				t.Fatalf("%v's report of attempts it does not hold was accepted: %v", who.from, acc.Accepted)
			}
		}
		e.executorWith(payroll.Secret, pay, path(api.PathSubtasksMap), api.MapRequest{ExecutionID: id, ParentID: st.ID, ParentAttempt: st.Attempt, Payloads: payloads}, 403, nil)
		e.executorAs(billing1, path(api.PathSubtasksMap), api.MapRequest{ExecutionID: id, ParentID: st.ID, ParentAttempt: st.Attempt, Payloads: payloads}, 409, nil)
		var page api.SubtaskPage
		e.call("GET", "/api/v1/executions/"+itoa(id)+"/subtasks", nil, 200, &page)
		if page.Counts[store.SubtaskRunning] != 3 {
			t.Fatalf("counts %v after the refused reports, want 3 running", page.Counts)
		}

		for i := range outcomes {
			outcomes[i].Result = json.RawMessage(fmt.Sprintf(`%d`, i))
		}
		e.executorAs(billing2, path(api.PathSubtasksResults), api.SubtaskResults{Results: outcomes}, 200, &acc)
		if len(acc.Accepted) != 3 {
			t.Fatalf("accepted %v, want the 3", acc.Accepted)
		}
		e.executorAs(billing2, path(api.PathSubtasksResults), api.SubtaskResults{Results: outcomes}, 200, &acc)
		if len(acc.Accepted) != 0 {
			t.Fatalf("a repeated report was accepted again: %v", acc.Accepted)
		}
		e.executorAs(billing2, path(api.PathSubtasksClaim), api.ClaimRequest{Handlers: []string{"report"}, Maps: 1}, 200, &claimed)
		if len(claimed.Maps) != 1 || claimed.Maps[0].ExecutionID != id {
			t.Fatalf("claimed %+v, want the map to reduce", claimed)
		}
		list := api.SubtaskListRequest{ExecutionID: id}
		reduced := api.ReducedRequest{ExecutionID: id, State: "succeeded", Result: json.RawMessage(`{"forged":true}`)}
		e.executorWith(payroll.Secret, pay, path(api.PathSubtasksList), list, 403, nil)
		e.executorWith(payroll.Secret, pay, path(api.PathSubtasksReduced), reduced, 403, nil)
		e.executorAs(billing1, path(api.PathSubtasksList), list, 409, nil)
		e.executorAs(billing1, path(api.PathSubtasksReduced), reduced, 409, nil)
		e.executorAs(billing2, path(api.PathSubtasksList), api.SubtaskListRequest{ExecutionID: id + 1000}, 404, nil)

		var got []api.Subtask
		e.executorAs(billing2, path(api.PathSubtasksList), list, 200, &got)
		if len(got) != 3 || string(got[2].Result) != "2" {
			t.Fatalf("read %+v", got)
		}
		var done api.ReducedResponse
		e.executorAs(billing2, path(api.PathSubtasksReduced), api.ReducedRequest{ExecutionID: id, State: "succeeded", Result: json.RawMessage(`{"sum":3}`)}, 200, &done)
		if !done.Completed {
			t.Fatal("the reduce did not complete the run")
		}
		if x := e.execution(id); x.State != "succeeded" {
			t.Fatalf("the run is %s, want succeeded", x.State)
		}
	})
}

// sdkMapChildEnv makes the test binary an SDK executor process (runSDKMapChild): the victim
// of TestExecutorMapReduceKilled. Its value is the server's URL.
const sdkMapChildEnv = "SUNDIAL_SDKMAP_CHILD"

// ledgerTask runs a sub-task: it writes "RAN <payload> <token>" to the ledger (a fresh token
// per run) and returns the token as its result, so an accepted result names the run it came
// from.
func ledgerTask(write func(string)) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		token := hex.EncodeToString(b)
		write(fmt.Sprintf("RAN %s %s", payload, token))
		select { // a little work, so that the victim holds sub-tasks when it dies
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`"` + token + `"`), nil
	}
}

// ledgerMap maps n payloads 0..n-1 from Start.
func ledgerMap(n int, task func(context.Context, json.RawMessage) (json.RawMessage, error), reduced chan<- int64) executor.MapReduce {
	return executor.MapReduce{
		Start: func(ctx context.Context) error {
			ps := make([]json.RawMessage, n)
			for i := range ps {
				ps[i] = json.RawMessage(strconv.Itoa(i))
			}
			return executor.Map(ctx, ps)
		},
		Task: task,
		Reduce: func(ctx context.Context, rs *executor.MapResults) error {
			reduced <- rs.Total
			return nil
		},
	}
}

const killedMapSize = 1000

func runSDKMapChild(url string) {
	var mu sync.Mutex
	ex, err := executor.New(executor.Config{Server: url, Token: execToken, App: "billing", Transport: executor.TransportStream,
		SpoolDir: os.TempDir() + "/sdkmap-child-" + strconv.Itoa(os.Getpid()),
		Map:      executor.MapConfig{Workers: 16, Batch: 16, PollInterval: 50 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ex.HandleMapReduce("ledger", ledgerMap(killedMapSize, ledgerTask(func(l string) {
		mu.Lock()
		fmt.Println(l)
		mu.Unlock()
	}), make(chan int64, 1)))
	if err := ex.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("STARTED " + ex.Instance())
	select {} // until killed
}

// TestExecutorMapReduceKilled kills, with SIGKILL, an SDK executor process (on the stream
// transport) that ran a map's Start and is running its sub-tasks, then starts two survivor
// executors (one streamed, one pushed to). Once the victim's registration is swept its
// sub-tasks go back to pending and the survivors finish and reduce the map; the run, which
// the victim no longer held, is not declared lost with it. A ledger kept outside the database
// (the victim's stdout and the survivors' memory) records every run with a token the run
// returns: each sub-task's accepted result is the token of exactly one run of its payload,
// and only sub-tasks the victim held when it died ran twice.
func TestExecutorMapReduceKilled(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		e := newEnvWith(t, dialect, func(c *Config) {
			c.ExecutorToken = execToken
			c.ExecutorHeartbeat = 500 * time.Millisecond
			c.Scheduler.HeartbeatInterval = 200 * time.Millisecond
		})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), sdkMapChildEnv+"="+e.url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		runs := map[string][]string{} // payload → tokens of its runs
		tokens := map[string]int{}
		var mu sync.Mutex
		record := func(l string) {
			var p, token string
			if _, err := fmt.Sscanf(l, "RAN %s %s", &p, &token); err == nil {
				mu.Lock()
				runs[p] = append(runs[p], token)
				tokens[token]++
				mu.Unlock()
			}
		}
		lines := bufio.NewScanner(out)
		for lines.Scan() && !strings.HasPrefix(lines.Text(), "STARTED ") {
		}
		victimTokens := map[string]bool{}
		job := e.remoteJob("billing", "round_robin", func(j *store.Job) { j.Handler = "ledger"; j.MaxRetries = 2 })
		e.call("POST", "/api/v1/jobs/"+itoa(job)+"/run", nil, 202, nil)
		victim := func(l string) {
			record(l)
			if f := strings.Fields(l); len(f) == 3 {
				victimTokens[f[2]] = true
			}
		}
		for lines.Scan() {
			victim(lines.Text())
			if len(victimTokens) == 300 { // well into the map: kill it
				break
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		for lines.Scan() { // what the victim wrote before it died is in its ledger too
			victim(lines.Text())
		}
		var xid int64
		for _, x := range e.jobExecutions(job) {
			xid = x.ID
		}
		victimHeld, err := e.st.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: xid, State: store.SubtaskRunning, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}

		reduced := make(chan int64, 2)
		for _, transport := range []string{executor.TransportStream, executor.TransportPush} {
			cfg := executor.Config{Server: e.url, Token: execToken, App: "billing", Transport: transport, SpoolDir: t.TempDir(),
				Map: executor.MapConfig{Workers: 16, Batch: 16, PollInterval: 50 * time.Millisecond}}
			if transport == executor.TransportPush {
				cfg.Listen = "127.0.0.1:0"
			}
			ex, err := executor.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ex.HandleMapReduce("ledger", ledgerMap(killedMapSize, ledgerTask(record), reduced))
			if err := ex.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		}
		select {
		case total := <-reduced:
			if total != killedMapSize {
				t.Errorf("reduced a map of %d sub-tasks, want %d", total, killedMapSize)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no reduce within 60 s")
		}
		run := e.onlyRunSucceeded(job)
		if run.ID != xid {
			t.Fatalf("execution %d succeeded, want %d (the run that mapped)", run.ID, xid)
		}
		all, err := e.st.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: xid, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != killedMapSize {
			t.Fatalf("%d sub-tasks stored, want %d", len(all), killedMapSize)
		}
		mu.Lock()
		defer mu.Unlock()
		twice := 0
		for _, s := range all {
			var token string
			if s.State != store.SubtaskSucceeded || json.Unmarshal([]byte(s.Result), &token) != nil {
				t.Fatalf("sub-task %d (payload %s) is %s with result %q", s.ID, s.Payload, s.State, s.Result)
			}
			if tokens[token] != 1 || !slices.Contains(runs[s.Payload], token) {
				t.Fatalf("sub-task %d (payload %s): accepted result %s is in the ledger %d times (runs %v)", s.ID, s.Payload, token, tokens[token], runs[s.Payload])
			}
			// Run twice only when the victim's run (the first) was cut off before its result
			// was accepted: a sub-task it held when it died.
			if rs := runs[s.Payload]; len(rs) > 1 {
				twice++
				if len(rs) > 2 || !victimTokens[rs[0]] || victimTokens[rs[1]] || token != rs[1] {
					t.Errorf("sub-task %d (payload %s) ran %d times (tokens %v, accepted %s): only a sub-task the victim held may run twice, once on it", s.ID, s.Payload, len(rs), rs, token)
				}
			}
		}
		t.Logf("%d sub-tasks were running when the victim died (by the store); %d ran twice", len(victimHeld), twice)
	})
}
