package engine

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// TestTriggerDataMergedAtFire: a fire of a trigger with its own params and data runs with the
// trigger's params and its data merged over the job's, its retry too; a fire of the job's
// other trigger sees the job's alone; and a persisting run stores its changes into the job
// without the trigger's keys.
func TestTriggerDataMergedAtFire(t *testing.T) {
	eachDialect(t, func(t *testing.T, dialect string) {
		type seen struct {
			trigger int64
			attempt int
			params  string
			data    map[string]any
		}
		var mu sync.Mutex
		var runs []seen
		n := newFakeNode(t, dialect, func(_ context.Context, f *Fire) Result {
			mu.Lock()
			runs = append(runs, seen{f.Execution.TriggerID, f.Execution.Attempt, f.Params(), maps.Clone(f.Job.Data)})
			mu.Unlock()
			if f.Execution.TriggerID != 0 && f.Execution.Attempt == 0 && f.Params() == "--region eu" {
				return Result{Err: errors.New("first attempt fails")}
			}
			out := maps.Clone(f.Job.Data)
			out["count"], out["region"] = 1.0, "changed by the run"
			return Result{Data: out}
		})
		job := insertJob(t, n.st, "report", func(j *store.Job) {
			j.Params, j.Data = "--region us", map[string]any{"region": "us", "owner": "ops"}
			j.PersistData, j.MaxRetries, j.RetryBackoffMs = true, 1, 1000
		})
		eu := insertTrigger(t, n.st, job, "eu", schedule.Simple{}, t0.Add(time.Second), func(tr *store.Trigger) {
			tr.Params, tr.Data = "--region eu", map[string]any{"region": "eu", "only-eu": true}
		})
		n.start()
		n.advance(time.Second)
		n.completed(1) // eu fails
		n.advance(time.Second)
		n.completed(1) // its retry succeeds and persists

		mu.Lock()
		got := runs
		mu.Unlock()
		merged := map[string]any{"region": "eu", "owner": "ops", "only-eu": true}
		want := []seen{{eu.ID, 0, "--region eu", merged}, {eu.ID, 1, "--region eu", merged}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("runs\n got %+v\nwant %+v", got, want)
		}
		stored, err := n.st.JobGet(context.Background(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The run's change to a key of its own is kept; the trigger's keys keep the job's value
		// (region) or stay out of the job (only-eu).
		if w := map[string]any{"region": "us", "owner": "ops", "count": 1.0}; !reflect.DeepEqual(stored.Data, w) {
			t.Fatalf("job data after the persisting run %v, want %v", stored.Data, w)
		}

		plain := insertTrigger(t, n.st, job, "plain", schedule.Simple{}, t0.Add(10*time.Second), nil)
		n.advance(10 * time.Second)
		n.completed(1)
		mu.Lock()
		last := runs[len(runs)-1]
		mu.Unlock()
		if w := (seen{plain.ID, 0, "--region us", map[string]any{"region": "us", "owner": "ops", "count": 1.0}}); !reflect.DeepEqual(last, w) {
			t.Fatalf("the plain trigger's fire saw %+v, want %+v", last, w)
		}
	})
}

// TestRunParamsNeverReplaceAScript: a run's own params (a trigger's, a run-now's) replace the
// job's, except a script job's, whose params are its script: params given before the job
// became a script job must not run as its script.
func TestRunParamsNeverReplaceAScript(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  store.Job
		run  string
		want string
	}{
		{"plain job, run params", store.Job{Params: "--region us"}, "--region eu", "--region eu"},
		{"plain job, none", store.Job{Params: "--region us"}, "", "--region us"},
		{"script job", store.Job{Params: "echo hi", ScriptVersion: 3}, "rm -rf /", "echo hi"},
	} {
		f := &Fire{Job: &tc.job, Execution: &store.Execution{TriggerID: 1, Params: tc.run}}
		if got := f.Params(); got != tc.want {
			t.Errorf("%s: params %q, want %q", tc.name, got, tc.want)
		}
	}
}
