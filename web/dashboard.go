package web

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// The cluster as the API tells it (leadership and liveness are the API's rules).
type (
	nodeInfo     = api.Node
	instanceInfo = api.Executor
)

func (c *Console) nodes(r *http.Request) ([]nodeInfo, error) {
	var out struct{ Items []nodeInfo }
	err := c.callJSON(r, http.MethodGet, "/api/v1/nodes", nil, &out)
	return out.Items, err
}

func (c *Console) executors(r *http.Request, app string) ([]instanceInfo, error) {
	var out struct{ Items []instanceInfo }
	path := "/api/v1/executors"
	if app != "" {
		path += "?app=" + url.QueryEscape(app)
	}
	err := c.callJSON(r, http.MethodGet, path, nil, &out)
	return out.Items, err
}

// execRow is an execution with its job's name, as the lists show it.
type execRow struct {
	*store.Execution
	JobName string
}

// Duration is how long the run took, or has been running, in ms (-1 before it started).
func (x execRow) Duration(now int64) int64 {
	start := x.StartedAt
	if start == 0 {
		start = x.FiredAt
	}
	switch {
	case start == 0:
		return -1
	case x.FinishedAt == 0:
		return now - start
	}
	return x.FinishedAt - start
}

type fireRow struct {
	*store.Trigger
	JobName string
}

type dashboardView struct {
	Now       int64
	Running   []execRow
	Failures  []execRow
	Nodes     []nodeInfo
	Executors []instanceInfo
	NextFires []fireRow
}

// dashboardRows bounds each of the dashboard's lists.
const dashboardRows = 20

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	now := c.clock.Now().UnixMilli()
	dv := dashboardView{Now: now}
	scope := userFrom(ctx).readScope()
	running, err := c.store.ExecutionList(ctx, store.ExecutionFilter{State: store.ExecRunning, Desc: true, Limit: dashboardRows,
		Scope: scope})
	if err != nil {
		return err
	}
	// The newest of each failed state, cut to the last day here: a fired-at bound in the
	// query made PostgreSQL scan the day's executions by time instead of the state's index.
	since := now - 24*time.Hour.Milliseconds()
	var failures []*store.Execution
	for _, st := range []store.ExecutionState{store.ExecFailed, store.ExecTimedOut, store.ExecLost} {
		xs, err := c.store.ExecutionList(ctx, store.ExecutionFilter{State: st, Desc: true, Limit: dashboardRows, Scope: scope})
		if err != nil {
			return err
		}
		for _, x := range xs {
			if max(x.FiredAt, x.FinishedAt) >= since {
				failures = append(failures, x)
			}
		}
	}
	slices.SortFunc(failures, func(a, b *store.Execution) int { return int(b.ID - a.ID) })
	failures = failures[:min(len(failures), dashboardRows)]
	trigs, err := c.store.TriggerList(ctx, store.TriggerFilter{State: store.TriggerWaiting, ByNextFire: true, Limit: dashboardRows,
		Scope: scope})
	if err != nil {
		return err
	}
	names, err := c.jobNames(r, append(append(jobIDs(running), jobIDs(failures)...), triggerJobIDs(trigs)...))
	if err != nil {
		return err
	}
	dv.Running, dv.Failures = withNames(running, names), withNames(failures, names)
	for _, t := range trigs {
		dv.NextFires = append(dv.NextFires, fireRow{t, names[t.JobID]})
	}
	if dv.Nodes, err = c.nodes(r); err != nil {
		return err
	}
	if dv.Executors, err = c.executors(r, ""); err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "dashboard", &view{Title: "Dashboard", Nav: "dashboard", Data: dv})
}

func jobIDs(xs []*store.Execution) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x.JobID
	}
	return out
}

func triggerJobIDs(ts []*store.Trigger) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.JobID
	}
	return out
}

// jobNames reads the names of the jobs ids in one query; a deleted job has none.
func (c *Console) jobNames(r *http.Request, ids []int64) (map[int64]string, error) {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	js, err := c.store.JobsGet(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(js))
	for _, j := range js {
		out[j.ID] = j.Group + "/" + j.Name
	}
	return out, nil
}

func withNames(xs []*store.Execution, names map[int64]string) []execRow {
	out := make([]execRow, len(xs))
	for i, x := range xs {
		out[i] = execRow{x, names[x.JobID]}
	}
	return out
}
