package chaos

import (
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// checkJob fires at t0, t0+1s and t0+2s.
func checkJob(id int64, recovery bool, retries int) JobSpec {
	t0 := time.UnixMilli(1_000_000)
	return JobSpec{ID: id, Name: "j", Recovery: recovery, Retries: retries,
		Trigger: schedule.Trigger{Schedule: schedule.Simple{Interval: time.Second, RepeatCount: 2}, Start: t0}}
}

func begin(job, sched int64, attempt int, exec int64, proc string, at int64) Entry {
	return Entry{Ev: "begin", JobID: job, Sched: sched, Attempt: attempt, ExecID: exec, Proc: proc, At: at}
}

func end(e Entry, ok bool, at int64) Entry {
	e.Ev, e.OK, e.At = "end", ok, at
	return e
}

func TestCheckClasses(t *testing.T) {
	const t0 = 1_000_000
	a := begin(1, t0, 0, 1, "node1:n1:1", t0+5)
	b := begin(1, t0+1000, 0, 2, "node1:n1:1", t0+1005)
	tests := []struct {
		name  string
		job   JobSpec
		in    Input
		want  map[Class]int
		fails bool
	}{{
		name: "once each; the third fire recorded failed without a run",
		job:  checkJob(1, false, 0),
		in: Input{Ledger: []Entry{a, end(a, true, t0+50), b, end(b, true, t0+1050)},
			DB: []DBExec{{ID: 3, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want: map[Class]int{Once: 2, NotRun: 1},
	}, {
		name: "a thawed node that runs a fire after its thaw and is killed mid-run: its recovery elsewhere is the kill's, no zombie",
		job:  checkJob(1, true, 0),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "node3:n3:3", t0+40000), begin(1, t0, 1, 4, "node2:n2:2", t0+70000),
			end(begin(1, t0, 1, 4, "node2:n2:2", t0+70000), true, t0+70300), b, end(b, true, t0+1050)},
			Procs: []Proc{{Name: "node3:n3:3", Frozen: t0 - 500, Thawed: t0 + 11000, Killed: t0 + 41000}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "lost", Node: "n3"},
				{ID: 4, JobID: 1, Sched: t0, Attempt: 1, Cause: "recovery", State: "succeeded", Node: "n2"},
				{ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want: map[Class]int{Recovery: 1, Once: 1, NotRun: 1},
	}, {
		name:  "a run twice on two live nodes is double; a fire with no trace is missing",
		job:   checkJob(1, true, 0),
		in:    Input{Ledger: []Entry{a, end(a, true, t0+50), begin(1, t0, 0, 1, "node2:n2:2", t0+60)}},
		want:  map[Class]int{Double: 1, Missing: 2},
		fails: true,
	}, {
		name: "a re-run after its node was killed mid-run is a recovery when the job asks for one",
		job:  checkJob(1, true, 0),
		in: Input{Ledger: []Entry{a, begin(1, t0, 1, 4, "node2:n2:2", t0+7000)},
			Procs: []Proc{{Name: "node1:n1:1", Killed: t0 + 20}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "lost"}, {ID: 4, JobID: 1, Sched: t0, Attempt: 1, Cause: "recovery", State: "succeeded"},
				{ID: 5, JobID: 1, Sched: t0 + 1000, State: "running", Node: "n3"}, {ID: 6, JobID: 1, Sched: t0 + 2000, State: "pending"}}},
		want:  map[Class]int{Recovery: 1, Stuck: 2},
		fails: true,
	}, {
		name: "a node killed after its handler returned but before the result was stored: the re-run is a recovery; with the result stored it is double",
		job:  checkJob(1, true, 0),
		in: Input{Ledger: []Entry{a, end(a, true, t0+50), begin(1, t0, 1, 4, "node2:n2:2", t0+7000),
			b, end(b, true, t0+1050), begin(1, t0+1000, 1, 5, "node2:n2:2", t0+8000)},
			Procs: []Proc{{Name: "node1:n1:1", Killed: t0 + 1060}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "lost"}, {ID: 4, JobID: 1, Sched: t0, Attempt: 1, Cause: "recovery", State: "succeeded"},
				{ID: 2, JobID: 1, Sched: t0 + 1000, State: "succeeded"}, {ID: 5, JobID: 1, Sched: t0 + 1000, Attempt: 1, Cause: "recovery", State: "succeeded"},
				{ID: 6, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want:  map[Class]int{Recovery: 1, Double: 1, NotRun: 1},
		fails: true,
	}, {
		name: "a retry is joined to its failed attempt; a retry after a success is double",
		job:  checkJob(1, false, 2),
		in: Input{Ledger: []Entry{a, end(a, false, t0+50), begin(1, t0+250, 1, 7, "node2:n2:2", t0+260),
			b, end(b, true, t0+1050), begin(1, t0+1300, 1, 8, "node2:n2:2", t0+1300)},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "failed", FinishedAt: t0 + 50},
				{ID: 7, JobID: 1, Sched: t0 + 250, Attempt: 1, Cause: "retry", State: "succeeded"},
				{ID: 2, JobID: 1, Sched: t0 + 1000, State: "lost", FinishedAt: t0 + 1100},
				{ID: 8, JobID: 1, Sched: t0 + 1300, Attempt: 1, Cause: "retry", State: "succeeded"},
				{ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want:  map[Class]int{Retried: 1, Double: 1, NotRun: 1},
		fails: true,
	}, {
		name: "an executor killed after its handler returned but before its result was stored: the retry of the lost run is a retry; with no death to explain the loss it is double",
		job:  checkJob(1, false, 2),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "exec2::1", t0+5), end(begin(1, t0, 0, 1, "exec2::1", t0+5), true, t0+50),
			begin(1, t0+2500, 1, 7, "exec1::2", t0+2500),
			begin(1, t0+1000, 0, 2, "exec1::2", t0+1005), end(begin(1, t0+1000, 0, 2, "exec1::2", t0+1005), true, t0+1050),
			begin(1, t0+3000, 1, 8, "exec2::3", t0+3000)},
			Procs: []Proc{{Name: "exec2::1", Killed: t0 + 400}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "lost", FinishedAt: t0 + 2400},
				{ID: 7, JobID: 1, Sched: t0 + 2500, Attempt: 1, Cause: "retry", State: "succeeded"},
				{ID: 2, JobID: 1, Sched: t0 + 1000, State: "lost", FinishedAt: t0 + 2900},
				{ID: 8, JobID: 1, Sched: t0 + 3000, Attempt: 1, Cause: "retry", State: "succeeded"},
				{ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want:  map[Class]int{Retried: 1, Double: 1, NotRun: 1},
		fails: true,
	}, {
		name: "a run lost with its executor whose result arrived late (the new process delivered the old one's spool) is still lost: its retry is a retry",
		job:  checkJob(1, false, 2),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "exec2::1", t0+5), end(begin(1, t0, 0, 1, "exec2::1", t0+5), true, t0+50),
			begin(1, t0+900, 1, 7, "exec1::2", t0+900),
			begin(1, t0+1000, 0, 2, "exec1::2", t0+1005), end(begin(1, t0+1000, 0, 2, "exec1::2", t0+1005), true, t0+1050),
			begin(1, t0+2000, 0, 3, "exec1::2", t0+2005), end(begin(1, t0+2000, 0, 3, "exec1::2", t0+2005), true, t0+2050)},
			Procs: []Proc{{Name: "exec2::1", Killed: t0 + 400}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "succeeded", FiredAt: t0 + 5, FinishedAt: t0 + 50, Late: true},
				{ID: 7, JobID: 1, Sched: t0 + 900, Attempt: 1, Cause: "retry", State: "succeeded"},
				{ID: 2, JobID: 1, Sched: t0 + 1000, State: "succeeded"}, {ID: 3, JobID: 1, Sched: t0 + 2000, State: "succeeded"}}},
		want: map[Class]int{Retried: 1, Once: 2},
	}, {
		name: "a frozen node that runs a fire after its thaw, which another node ran, is a zombie",
		job:  checkJob(1, false, 0),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "node2:n2:2", t0+9000), begin(1, t0, 0, 1, "node3:n3:3", t0+12000),
			b, end(b, true, t0+1050), begin(1, t0+2000, 0, 9, "node3:n3:3", t0+12000)},
			Procs: []Proc{{Name: "node3:n3:3", Frozen: t0 - 500, Thawed: t0 + 11000}},
			DB:    []DBExec{{ID: 9, JobID: 1, Sched: t0 + 2000, State: "lost", Node: "n3"}}},
		want:  map[Class]int{Zombie: 2, Once: 1},
		fails: true,
	}, {
		name: "a frozen node that no leader declared dead in time keeps its fire: its failed run after the thaw and the retry elsewhere are no zombie",
		job:  checkJob(1, false, 2),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "node3:n3:3", t0+12000), end(begin(1, t0, 0, 1, "node3:n3:3", t0+12000), false, t0+12050),
			begin(1, t0+12400, 1, 7, "node1:n1:1", t0+12400), b, end(b, true, t0+1050)},
			Procs: []Proc{{Name: "node3:n3:3", Frozen: t0 - 500, Thawed: t0 + 11000}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "failed", Node: "n3", FinishedAt: t0 + 12050},
				{ID: 7, JobID: 1, Sched: t0 + 12400, Attempt: 1, Cause: "retry", State: "succeeded", Node: "n1"},
				{ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want: map[Class]int{Retried: 1, Once: 1, NotRun: 1},
	}, {
		name: "a thawed node that runs, long after its thaw, a fire its new life took, and is killed mid-run: lost by the kill, no zombie",
		job:  checkJob(1, false, 0),
		in: Input{Ledger: []Entry{begin(1, t0, 0, 1, "node3:n3:3", t0+40000), b, end(b, true, t0+1050)},
			Procs: []Proc{{Name: "node3:n3:3", Frozen: t0 - 500, Thawed: t0 + 11000, Killed: t0 + 40100}},
			DB:    []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "lost", Node: "n3"}, {ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want: map[Class]int{Once: 2, NotRun: 1},
	}, {
		name: "a frozen node that starts, after its thaw, a run whose recovery another node ran is a zombie",
		job:  checkJob(1, true, 0),
		in: Input{Ledger: []Entry{begin(1, t0, 1, 4, "node2:n2:2", t0+9000), begin(1, t0, 0, 1, "node3:n3:3", t0+12000), b, end(b, true, t0+1050)},
			Procs: []Proc{{Name: "node3:n3:3", Frozen: t0 - 500, Thawed: t0 + 11000}},
			DB: []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "succeeded", Node: "n3"}, {ID: 4, JobID: 1, Sched: t0, Attempt: 1, Cause: "recovery", State: "succeeded", Node: "n2"},
				{ID: 9, JobID: 1, Sched: t0 + 2000, State: "failed"}}},
		want:  map[Class]int{Zombie: 1, Once: 1, NotRun: 1},
		fails: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Jobs = []JobSpec{tt.job}
			r := Check(tt.in)
			for _, c := range classOrder {
				if r.Counts[c] != tt.want[c] {
					t.Errorf("%s: %d, want %d\n%s", c, r.Counts[c], tt.want[c], r)
				}
			}
			if got := len(r.Failed()) > 0; got != tt.fails {
				t.Errorf("Failed() = %v, want failing %v", r.Failed(), tt.fails)
			}
		})
	}
}

func TestSerialOverlap(t *testing.T) {
	const t0 = 1_000_000
	j := checkJob(1, false, 0)
	j.Serial = true
	a := begin(1, t0, 0, 1, "node1:n1:1", t0)
	b := begin(1, t0+1000, 0, 2, "node2:n2:2", t0+1000)
	c := begin(1, t0+2000, 0, 3, "node1:n1:1", t0+2000)
	r := Check(Input{Jobs: []JobSpec{j}, Ledger: []Entry{a, end(a, true, t0+1500), b, end(b, true, t0+1900), c, end(c, true, t0+2100)}})
	if r.SerialOverlaps != 1 || r.Counts[Once] != 3 {
		t.Fatalf("overlaps %d, once %d: want 1 and 3\n%s", r.SerialOverlaps, r.Counts[Once], r)
	}
}

// TestCheckForgotten: a run the ledger holds whose execution the database lacks (a commit
// lost in a failover) fails the run when the database's list is complete, and is not
// counted when it may not be.
func TestCheckForgotten(t *testing.T) {
	const t0 = 1_000_000
	a := begin(1, t0, 0, 1, "node1:n1:1", t0+5)
	b := begin(1, t0+1000, 0, 2, "node1:n1:1", t0+1005)
	in := Input{Jobs: []JobSpec{checkJob(1, false, 0)}, Ledger: []Entry{a, end(a, true, t0+50), b, end(b, true, t0+1050)},
		DB:         []DBExec{{ID: 1, JobID: 1, Sched: t0, State: "succeeded"}, {ID: 3, JobID: 1, Sched: t0 + 2000, State: "failed"}},
		DBComplete: true}
	r := Check(in)
	if r.Forgotten != 1 || len(r.Failed()) != 1 {
		t.Errorf("forgotten %d, failed %v: want 1 (execution 2 ran and the database lacks it)", r.Forgotten, r.Failed())
	}
	in.DBComplete = false
	if r := Check(in); r.Forgotten != 0 {
		t.Errorf("forgotten %d with an incomplete list, want 0", r.Forgotten)
	}
}

// TestCheckFreezeReleasedLate: a long freeze fails the run when the work the node held was
// released after its thaw, or never; not when it was released during the freeze, or when the
// node held nothing.
func TestCheckFreezeReleasedLate(t *testing.T) {
	const t0 = 1_000_000
	freeze := Kill{At: t0, Proc: "node2:n2:2", NodeID: "n2", Restart: "thawed", Restarted: t0 + 50_000, ReleaseBy: t0 + 50_000}
	for _, c := range []struct {
		held     int
		released int64
		fails    bool
	}{{3, t0 + 38_000, false}, {3, t0 + 51_000, true}, {3, 0, true}, {0, 0, false}} {
		k := freeze
		k.Held, k.Released = c.held, c.released
		r := Check(Input{Kills: []Kill{k}})
		if failed := r.Failed(); (len(failed) > 0) != c.fails {
			t.Errorf("held %d, released at +%d ms: failed %v, want failing %v", c.held, c.released-t0, failed, c.fails)
		}
	}
}
