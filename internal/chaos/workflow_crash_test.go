package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestWorkflowNodeCrashProcesses runs a workflow a -> b -> c on a real `sundial` node process
// (chaosproc node: server.New with the ledger handler), SIGKILLs it while b runs, then starts
// a second node process: it declares the first dead, runs b again (its job requests
// recovery) and then c, and the run succeeds. The ledger, a file outside the database that
// each handler appends to when it begins and ends, shows each node of the workflow ended
// exactly once, and only b began twice (once on the killed node, which never ended it); the
// database holds one first execution per node.
func TestWorkflowNodeCrashProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs node processes")
	}
	ctx := context.Background()
	bin, err := buildProc(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			dsn := testdb.DSN(t, dialect)
			st, err := sqlstore.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger.jsonl")
			ids := map[string]int64{}
			for name, runMs := range map[string]int{"a": 20, "b": 60_000, "c": 20} {
				j := &store.Job{Group: "wf", Name: name, TargetKind: store.TargetLocal, Handler: "ledger",
					Params: fmt.Sprintf(`{"run_ms":%d}`, runMs), Concurrency: store.ConcurrencyAllow, Enabled: true, RequestsRecovery: true}
				if err := st.JobInsert(ctx, j); err != nil {
					t.Fatal(err)
				}
				ids[name] = j.ID
			}
			w := &store.Workflow{Name: "crash", Graph: fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"b","job_id":%d},{"name":"c","job_id":%d}],
				"edges":[{"from":"a","to":"b"},{"from":"b","to":"c"}]}`, ids["a"], ids["b"], ids["c"])}
			if err := st.WorkflowInsert(ctx, w); err != nil {
				t.Fatal(err)
			}
			node := func(label, id string) *process {
				addr, err := loopbackAddr()
				if err != nil {
					t.Fatal(err)
				}
				return &process{label: label, nodeID: id, addr: addr, logDir: dir, args: func(p *process) []string {
					return []string{"node", "--addr", p.addr, "--db", dsn, "--node-id", p.nodeID, "--proc", p.label,
						"--ledger", ledger, "--heartbeat", "200ms", "--log-level", "warn"}
				}}
			}
			victim, survivor := node("victim", "v1"), node("survivor", "s1")
			t.Cleanup(func() { victim.stop(5 * time.Second); survivor.stop(5 * time.Second) })
			if _, err := victim.start(bin); err != nil {
				t.Fatal(err)
			}
			if err := victim.waitUp(ctx, true); err != nil {
				t.Fatal(err)
			}
			// Start the run from outside the nodes: a scheduler on the store that is not started
			// only writes the run and its root node.
			sched, err := sundial.New(sundial.Config{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			run, err := sched.Engine().StartWorkflow(ctx, w.ID, "", store.CauseManual)
			if err != nil {
				t.Fatal(err)
			}
			waitLedger(t, ledger, "b to begin on the victim", func(es []Entry) bool {
				return count(es, ids["b"], "begin", "victim") == 1
			})
			if err := victim.signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// b's run time on the survivor is short: its handler reads the job's params at run time.
			b, err := st.JobGet(ctx, ids["b"])
			if err != nil {
				t.Fatal(err)
			}
			b.Params = `{"run_ms":20}`
			if err := st.JobUpdate(ctx, b); err != nil {
				t.Fatal(err)
			}
			if _, err := survivor.start(bin); err != nil {
				t.Fatal(err)
			}
			if err := survivor.waitUp(ctx, true); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(2 * time.Minute)
			for {
				r, err := st.WorkflowRunGet(ctx, run.ID)
				if err != nil {
					t.Fatal(err)
				}
				if r.State != "running" {
					if r.State != "succeeded" {
						t.Fatalf("run %s: %s", r.State, r.Message)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run did not end on the survivor within 2 minutes (logs in %s)", dir)
				}
				time.Sleep(50 * time.Millisecond)
			}
			es, err := ReadLedger(ledger)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string][4]int{
				// begins on victim, survivor; ends on victim, survivor
				"a": {1, 0, 1, 0}, "b": {1, 1, 0, 1}, "c": {0, 1, 0, 1},
			} {
				id := ids[name]
				got := [4]int{count(es, id, "begin", "victim"), count(es, id, "begin", "survivor"), count(es, id, "end", "victim"), count(es, id, "end", "survivor")}
				if got != want {
					t.Errorf("node %s in the ledger: begins victim/survivor, ends victim/survivor = %v, want %v", name, got, want)
				}
			}
			nodes, err := st.WorkflowNodes(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != 3 {
				t.Fatalf("%d node rows, want 3", len(nodes))
			}
			for _, n := range nodes {
				xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: ids[n.Node], Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				first := 0
				for _, x := range xs {
					if x.Attempt == 0 {
						first++
					}
				}
				if n.State != "succeeded" || first != 1 {
					t.Errorf("node %s is %s with %d first executions, want succeeded with 1", n.Node, n.State, first)
				}
			}
		})
	}
}

// count counts the ledger's events ev of job by processes whose name starts with proc.
func count(es []Entry, job int64, ev, proc string) int {
	n := 0
	for _, e := range es {
		if e.JobID == job && e.Ev == ev && len(e.Proc) >= len(proc) && e.Proc[:len(proc)] == proc {
			n++
		}
	}
	return n
}

// waitLedger polls the ledger file (written by the node processes) until ok holds.
func waitLedger(t *testing.T, path, what string, ok func([]Entry) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		es, err := ReadLedger(path)
		if err == nil && ok(es) {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
