package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// JobSpec is one job of the load with its one trigger, as the suite created it.
type JobSpec struct {
	ID       int64
	Name     string
	Remote   bool // runs on the executors
	Serial   bool // concurrency serial
	Recovery bool // requests recovery
	Retries  int
	Params   JobParams
	// Trigger is the job's trigger (Schedule, Start, End, Misfire).
	Trigger schedule.Trigger
}

// Expected returns the fire times (Unix ms) the schedule calls for.
func (j JobSpec) Expected() []int64 {
	tr := j.Trigger
	var out []int64
	if _, err := tr.ComputeFirst(nil); err != nil {
		return nil
	}
	for !tr.Next.IsZero() {
		out = append(out, tr.Next.UnixMilli())
		tr.Triggered(nil)
	}
	return out
}

// DBExec is what the database says of one execution after the run.
type DBExec struct {
	ID      int64
	JobID   int64
	Sched   int64
	Attempt int
	Shard   int
	State   string
	Node    string
	Cause   string
	// FiredAt is when it was claimed to run, FinishedAt when it ended (Unix ms; 0 while live).
	FiredAt, FinishedAt int64
	// Late: it was declared lost, and its result arrived afterwards (engine.LateSuffix):
	// State is the real outcome, FinishedAt the real end, and the loss (which scheduled the
	// job's retry) came after FiredAt.
	Late bool
	// Msg is the database's trigger and handle messages, for the report.
	Msg string
	// WorkflowNode is the workflow node (of the workflow load) this execution ran, 0 for none.
	WorkflowNode int64
}

// Live reports whether the execution is not over (pending, acquired or running).
func (d DBExec) Live() bool {
	return d.State == "pending" || d.State == "acquired" || d.State == "running"
}

// Proc is one process the suite started (one life: a restart is a new Proc).
type Proc struct {
	Name   string // ledger name, "node1:n1:4242"
	NodeID string // the node id it ran under ("" for executors)
	// Killed is when the suite killed it with SIGKILL (Unix ms; 0: never).
	Killed int64
	// Frozen and Thawed are when a SIGSTOP that lasted past the node timeout began and ended
	// (Unix ms; 0: never frozen that long): the cluster declared the node dead meanwhile.
	Frozen, Thawed int64
}

// Kill is one SIGKILL of a node, or one freeze (SIGSTOP) long enough that the cluster must
// take its work while it lasts, and what became of the work it held.
type Kill struct {
	At     int64  // Unix ms
	Proc   string // the killed process
	NodeID string
	// Restart says how it came back: "same id", "new id", "" (not restarted) or "thawed" (a
	// freeze); Restarted is when the new process answered or the frozen one was let go (Unix
	// ms; 0: it did not).
	Restart   string
	Restarted int64
	// Held is how many live executions the node owned when it died; Released is when the
	// last of them left it (ended, went back to pending or to another node; 0: never).
	Held     int
	Released int64
	// ReleaseBy, when set, is when its work must have been released (Unix ms): a freeze
	// longer than the node timeout and the database's idle-in-transaction timeout together
	// is released before the thaw, even when the node froze inside a transaction holding
	// its life's row (which the leader's recovery waits for).
	ReleaseBy int64 `json:",omitempty"`
}

// Late reports whether the work the node held was released after ReleaseBy (or never).
func (k Kill) Late() bool {
	return k.ReleaseBy != 0 && k.Held > 0 && (k.Released == 0 || k.Released > k.ReleaseBy)
}

// Fault is one injected fault, for the report's timeline.
type Fault struct {
	At   int64 // Unix ms
	What string
	Err  string `json:",omitempty"` // why it did not take effect; "" when it did
}

// Input is everything Check looks at.
type Input struct {
	Dialect string
	Jobs    []JobSpec
	Ledger  []Entry
	DB      []DBExec
	Procs   []Proc
	Kills   []Kill
	Faults  []Fault
	Start   int64 // when the load began (Unix ms)
	Settle  time.Duration
	// DBComplete says DB holds every execution the database ever had (no retention ran), so
	// that a run in the ledger whose execution it lacks was forgotten (Report.Forgotten).
	DBComplete bool
}

// Class is what became of one fire.
type Class string

// The classes, worst first: a fire is given the worst class any of its runs earns.
const (
	Zombie   Class = "zombie"   // a run by a node after the cluster had declared it dead
	Double   Class = "double"   // run twice where nothing justifies the second run
	Stuck    Class = "stuck"    // an execution still live after the settle
	Missing  Class = "missing"  // never run, and the database holds no execution of it
	NotRun   Class = "not run"  // never run; the database records it ended (failed, lost…)
	Recovery Class = "recovery" // re-run because its node or executor died mid-run, as the job asks
	Retried  Class = "retried"  // a later attempt after a failed or lost one
	Once     Class = "once"     // ran once
)

var classOrder = []Class{Zombie, Double, Stuck, Missing, NotRun, Recovery, Retried, Once}

// Finding is one fire that missed a target, for the report's examples.
type Finding struct {
	Class  Class
	Job    string
	Sched  int64
	Detail string
}

// Report is the checker's verdict on one run.
type Report struct {
	Dialect        string
	Fires          int // fires the schedules call for
	Runs           int // handler runs the ledger holds
	Counts         map[Class]int
	NotRunStates   map[string]int
	StuckRows      int
	Unexpected     int // runs of fires the schedules do not call for
	SerialOverlaps int // two runs of a serial job at once
	// Forgotten counts the runs the ledger holds whose execution the database does not: a
	// commit the database acknowledged and then lost (a failover to a standby that lacked
	// it).
	Forgotten int
	// Workflows is the workflow load's verdict (nil without one).
	Workflows                 *WorkflowReport
	LateP50, LateP99, LateMax time.Duration
	Kills                     []Kill
	Faults                    []Fault
	Findings                  []Finding // up to a few per class
	Start                     int64
}

// Failed lists the targets the run missed: every fault of the plan took effect, 0 double,
// zombie, missing and stuck, no unexpected run and no overlap of a serial job.
func (r *Report) Failed() []string {
	var out []string
	for _, f := range r.Faults {
		if f.Err != "" {
			out = append(out, fmt.Sprintf("fault %q did not take effect: %s", f.What, f.Err))
		}
	}
	for _, c := range []Class{Double, Zombie, Missing, Stuck} {
		if r.Counts[c] > 0 {
			out = append(out, fmt.Sprintf("%d %s", r.Counts[c], c))
		}
	}
	if r.StuckRows > 0 {
		out = append(out, fmt.Sprintf("%d stuck rows", r.StuckRows))
	}
	for _, k := range r.Kills {
		if k.Late() {
			out = append(out, fmt.Sprintf("the work %s held stayed with it through its freeze", k.Proc))
		}
	}
	if r.Unexpected > 0 {
		out = append(out, fmt.Sprintf("%d unexpected runs", r.Unexpected))
	}
	if r.SerialOverlaps > 0 {
		out = append(out, fmt.Sprintf("%d overlapping runs of serial jobs", r.SerialOverlaps))
	}
	if r.Forgotten > 0 {
		out = append(out, fmt.Sprintf("%d runs the database forgot", r.Forgotten))
	}
	if r.Workflows != nil {
		out = append(out, r.Workflows.Targets()...)
	}
	return out
}

type fireKey struct {
	job   int64
	sched int64
}

type runRec struct {
	Entry
	root  int64 // the scheduled time of the fire the run belongs to
	ended bool
	ok    bool
	endAt int64
}

// Check classifies every fire of in.Jobs. It has no I/O.
func Check(in Input) *Report {
	r := &Report{Dialect: in.Dialect, Counts: map[Class]int{}, NotRunStates: map[string]int{}, Kills: in.Kills,
		Faults: in.Faults, Start: in.Start}
	procs := map[string]Proc{}
	for _, p := range in.Procs {
		procs[p.Name] = p
	}
	// Runs: begins joined with their ends (same run key and process).
	type runID struct {
		k    Key
		proc string
	}
	ends := map[runID]Entry{}
	for _, e := range in.Ledger {
		if e.Ev == "end" {
			ends[runID{e.Key(), e.Proc}] = e
		}
	}
	roots := fireRoots(in.DB)
	known := make(map[int64]bool, len(in.DB))
	for _, d := range in.DB {
		known[d.ID] = true
	}
	for _, e := range in.Ledger {
		if in.DBComplete && e.Ev == "begin" && e.ExecID != 0 && !known[e.ExecID] {
			r.Forgotten++
		}
	}
	rootOf := func(execID, sched int64) int64 {
		if root, ok := roots[execID]; ok {
			return root
		}
		return sched
	}
	byFire := map[fireKey][]runRec{}
	for _, e := range in.Ledger {
		if e.Ev != "begin" {
			continue
		}
		rr := runRec{Entry: e, root: rootOf(e.ExecID, e.Sched)}
		if end, ok := ends[runID{e.Key(), e.Proc}]; ok {
			rr.ended, rr.ok, rr.endAt = true, end.OK, end.At
		}
		fk := fireKey{e.JobID, rr.root}
		byFire[fk] = append(byFire[fk], rr)
		r.Runs++
	}
	dbByFire := map[fireKey][]DBExec{}
	execNode := map[int64]DBExec{}
	for _, d := range in.DB {
		fk := fireKey{d.JobID, rootOf(d.ID, d.Sched)}
		dbByFire[fk] = append(dbByFire[fk], d)
		execNode[d.ID] = d
		if d.Live() {
			r.StuckRows++
		}
	}
	// died: the run's process was killed before it ended the run, or frozen (and declared
	// dead) while it ran — or died after its handler returned but before the result was
	// written, so the database (which declared the run lost) never learned that it ended.
	// A run is over for the cluster only when its result is stored; in that window a run
	// the job asks to recover is re-run, which handlers absorb with their idempotency key.
	died := func(x runRec) bool {
		p := procs[x.Proc]
		d, known := execNode[x.ExecID]
		unrecorded := !x.ended || (known && (d.State == "lost" || d.Late))
		killed := unrecorded && p.Killed != 0 && p.Killed >= x.At
		frozen := p.Thawed != 0 && x.At < p.Frozen && (unrecorded || x.endAt >= p.Frozen)
		return killed || frozen
	}
	// zombie: a run begun by a process after the thaw of a freeze the cluster had declared
	// it dead in, of a fire scheduled before the thaw (so one it could have held from before).
	zombie := func(x runRec) bool {
		p := procs[x.Proc]
		return p.Thawed != 0 && x.At >= p.Thawed && x.Sched < p.Thawed
	}
	var late []time.Duration
	expected := map[fireKey]bool{}
	for _, j := range in.Jobs {
		for _, sched := range j.Expected() {
			fk := fireKey{j.ID, sched}
			expected[fk] = true
			r.Fires++
			c, why := classify(j, byFire[fk], dbByFire[fk], execNode, died, zombie)
			r.Counts[c]++
			if c == NotRun {
				for _, d := range dbByFire[fk] {
					r.NotRunStates[d.State]++
				}
			}
			if runs := byFire[fk]; len(runs) > 0 {
				first := slices.MinFunc(runs, func(a, b runRec) int { return int(a.At - b.At) })
				late = append(late, time.Duration(first.At-sched)*time.Millisecond)
			}
			if c != Once && c != Retried && c != Recovery && countOf(r.Findings, c) < 5 {
				r.Findings = append(r.Findings, Finding{Class: c, Job: j.Name, Sched: sched, Detail: why})
			}
		}
		if j.Serial {
			r.SerialOverlaps += serialOverlaps(byFire, j.ID, died)
		}
	}
	for fk, runs := range byFire {
		if !expected[fk] {
			r.Unexpected += len(runs)
		}
	}
	if len(late) > 0 {
		slices.Sort(late)
		r.LateP50, r.LateP99, r.LateMax = late[len(late)/2], late[len(late)*99/100], late[len(late)-1]
	}
	return r
}

func countOf(fs []Finding, c Class) int {
	n := 0
	for _, f := range fs {
		if f.Class == c {
			n++
		}
	}
	return n
}

// classify gives one fire its class and, when it is not a good one, says why.
func classify(j JobSpec, runs []runRec, db []DBExec, execs map[int64]DBExec,
	died, zombie func(runRec) bool) (Class, string) {
	worst := Once
	var why string
	raise := func(c Class, detail string) {
		if slices.Index(classOrder, c) < slices.Index(classOrder, worst) {
			worst, why = c, detail
		}
	}
	for _, d := range db {
		if d.Live() {
			raise(Stuck, fmt.Sprintf("execution %d (attempt %d, cause %s) still %s on node %q", d.ID, d.Attempt, d.Cause, d.State, d.Node))
		}
	}
	if len(runs) == 0 {
		if len(db) == 0 {
			raise(Missing, "no run and no execution in the database")
		} else {
			var states []string
			for _, d := range db {
				states = append(states, fmt.Sprintf("execution %d %s (%s)", d.ID, d.State, d.Msg))
			}
			raise(NotRun, "never run; database: "+strings.Join(states, ", "))
		}
		return worst, why
	}
	sort.Slice(runs, func(a, b int) bool { return runs[a].At < runs[b].At })
	byKey := map[Key][]runRec{}
	for _, x := range runs {
		k := Key{x.JobID, x.root, x.Attempt, x.Shard}
		byKey[k] = append(byKey[k], x)
	}
	for _, x := range runs {
		if !zombie(x) {
			continue
		}
		// The cluster gave the fire away if another process ran the same attempt (the frozen
		// node's acquired fire, released) or its recovery. A retry elsewhere after this run
		// failed is no sign of it: a freeze past the node timeout is declared dead only when
		// a leader sees it in time, and a node that beat first kept its work.
		for _, o := range runs {
			// (Its recovery is no sign either when the process was killed during this run:
			// the kill explains it.)
			if o.Proc != x.Proc && (o.Attempt == x.Attempt || o.Attempt > x.Attempt && execs[o.ExecID].Cause == "recovery" && !died(x)) {
				raise(Zombie, fmt.Sprintf("%s ran attempt %d (exec %d) after its thaw; %s ran attempt %d (exec %d) too",
					x.Proc, x.Attempt, x.ExecID, o.Proc, o.Attempt, o.ExecID))
			}
		}
		// Lost while it ran after the thaw, when the process was killed mid-run, is that kill's
		// loss (the node's later life ran it), not the freeze's.
		if d, ok := execs[x.ExecID]; ok && ((d.State == "lost" && !died(x)) || !strings.Contains(x.Proc, ":"+d.Node+":")) {
			raise(Zombie, fmt.Sprintf("%s ran execution %d after its thaw; the database says %s on node %q", x.Proc, x.ExecID, d.State, d.Node))
		}
	}
	for k, same := range byKey {
		for i := 1; i < len(same); i++ {
			prev, cur := same[i-1], same[i]
			switch {
			case zombie(prev) || zombie(cur):
				raise(Zombie, fmt.Sprintf("attempt %d ran on %s and %s, one of them after the cluster declared it dead", k.Attempt, prev.Proc, cur.Proc))
			case died(prev) && j.Recovery:
				raise(Recovery, "")
			case prev.Proc == cur.Proc && prev.ExecID == cur.ExecID:
				raise(Double, fmt.Sprintf("attempt %d (exec %d) began twice in one process, %s, at +%d and +%d ms",
					k.Attempt, cur.ExecID, cur.Proc, prev.At-prev.Sched, cur.At-cur.Sched))
			default:
				raise(Double, fmt.Sprintf("attempt %d ran on %s (exec %d, at +%d ms) and on %s (exec %d, at +%d ms)",
					k.Attempt, prev.Proc, prev.ExecID, prev.At-prev.Sched, cur.Proc, cur.ExecID, cur.At-cur.Sched))
			}
		}
		if k.Attempt == 0 {
			continue
		}
		before := byKey[Key{k.JobID, k.Sched, k.Attempt - 1, k.Shard}]
		for _, p := range before {
			switch {
			case died(p) && j.Recovery:
				raise(Recovery, "")
			case died(p):
				// Its process died before the result was stored (an executor killed while it
				// delivered it): the cluster saw the run lost, and a lost run is retried as
				// the job asks. A retry, not a double.
			case p.ended && p.ok:
				raise(Double, fmt.Sprintf("attempt %d ran (%s) after attempt %d succeeded (%s)", k.Attempt, same[0].Proc, k.Attempt-1, p.Proc))
			}
		}
		raise(Retried, "")
	}
	return worst, why
}

// serialOverlaps counts runs of a serial job that began while another of its runs was
// still running (both ended, so both intervals are known). A run its process died in (a
// freeze the cluster declared it dead in) is left out: nothing can stop a frozen handler.
func serialOverlaps(byFire map[fireKey][]runRec, job int64, died func(runRec) bool) int {
	var runs []runRec
	for fk, rs := range byFire {
		if fk.job == job {
			for _, x := range rs {
				if x.ended && !died(x) {
					runs = append(runs, x)
				}
			}
		}
	}
	sort.Slice(runs, func(a, b int) bool { return runs[a].At < runs[b].At })
	n := 0
	var maxEnd int64
	for _, x := range runs {
		if x.At < maxEnd {
			n++
		}
		maxEnd = max(maxEnd, x.endAt)
	}
	return n
}

// fireRoots maps every execution to the scheduled time of the fire it belongs to. A recovery
// re-run keeps its fire's scheduled time; a retry is scheduled when its backoff ends, so it
// is joined to the failed or lost attempt before it: the one of the same job and shard that
// ended last before the retry was due and has no retry yet (a late result's run: fired last).
func fireRoots(db []DBExec) map[int64]int64 {
	roots := map[int64]int64{}
	type slot struct {
		job     int64
		attempt int
		shard   int
	}
	ended := map[slot][]DBExec{} // failed or lost attempts, by FinishedAt
	var retries []DBExec
	for _, d := range db {
		roots[d.ID] = d.Sched
		if d.Cause == "retry" && d.Attempt > 0 {
			retries = append(retries, d)
		}
		if d.State == "failed" || d.State == "timed_out" || d.State == "lost" || d.Late {
			s := slot{d.JobID, d.Attempt, d.Shard}
			ended[s] = append(ended[s], d)
		}
	}
	// When each ended for the cluster: a late result's FinishedAt is the run's real end, which
	// may follow its retry; the loss that scheduled the retry followed its fire.
	endedAt := func(d DBExec) int64 {
		if d.Late {
			return d.FiredAt
		}
		return d.FinishedAt
	}
	for _, es := range ended {
		sort.Slice(es, func(a, b int) bool { return endedAt(es[a]) < endedAt(es[b]) })
	}
	// Lower attempts first, so a retry's parent already has its root.
	sort.Slice(retries, func(a, b int) bool {
		if retries[a].Attempt != retries[b].Attempt {
			return retries[a].Attempt < retries[b].Attempt
		}
		return retries[a].Sched < retries[b].Sched
	})
	claimed := map[int64]bool{}
	for _, d := range retries {
		es := ended[slot{d.JobID, d.Attempt - 1, d.Shard}]
		i := sort.Search(len(es), func(i int) bool { return endedAt(es[i]) > d.Sched })
		for i--; i >= 0; i-- {
			if !claimed[es[i].ID] {
				claimed[es[i].ID] = true
				roots[d.ID] = roots[es[i].ID]
				break
			}
		}
	}
	return roots
}
