package web

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// The cluster as the API tells it (leadership and liveness are the API's rules).
type (
	nodeInfo     = api.Node
	instanceInfo = api.Executor
)

func (c *Console) nodes(r *http.Request) ([]nodeInfo, error) {
	ns, err := c.ops().ListNodes.Execute(r.Context(), &server.AllOf{})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(*ns, func(a, b nodeInfo) int { return strings.Compare(a.ID, b.ID) })
	return *ns, nil
}

func (c *Console) executors(r *http.Request, app string) ([]instanceInfo, error) {
	xs, err := c.ops().ListExecutors.Execute(r.Context(), &server.AllOf{App: app})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(*xs, func(a, b instanceInfo) int {
		return strings.Compare(url.PathEscape(a.App)+"/"+a.Address, url.PathEscape(b.App)+"/"+b.Address)
	})
	return *xs, nil
}

// appNames are the names of the apps, for the pages' app filters and pickers.
func (c *Console) appNames(r *http.Request) ([]string, error) {
	as, err := c.ops().ListApps.Execute(r.Context(), &server.AllOf{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range *as {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	return names, nil
}

// calendars are the calendars, by name.
func (c *Console) calendars(r *http.Request) ([]*store.Calendar, error) {
	p, err := c.ops().ListCalendars.Execute(r.Context(), &server.CalendarQuery{Limit: 1000})
	if err != nil {
		return nil, err
	}
	return p.Calendars, nil
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
	Now int64
	// ReportEvery is how often the chart's report is recounted (its figures lag by as much).
	ReportEvery int64
	Running     []execRow
	Failures    []execRow
	Nodes       []nodeInfo
	Executors   []instanceInfo
	NextFires   []fireRow
	// Health is how this node keeps up (the cluster panel's line of it).
	Health *server.NodeHealth
}

// dashboardRows bounds each of the dashboard's lists.
const dashboardRows = 20

func (c *Console) dashboard(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	now := c.clock.Now().UnixMilli()
	dv := dashboardView{Now: now, ReportEvery: c.srv.ReportInterval().Milliseconds()}
	running, err := c.ops().ListExecutions.Execute(ctx, &server.ExecutionQuery{State: string(store.ExecRunning), Limit: dashboardRows})
	if err != nil {
		return err
	}
	// The newest of each failed state, cut to the last day here: a fired-at bound in the
	// query made PostgreSQL scan the day's executions by time instead of the state's index.
	since := now - 24*time.Hour.Milliseconds()
	var failures []*store.Execution
	for _, st := range []store.ExecutionState{store.ExecFailed, store.ExecTimedOut, store.ExecLost} {
		page, err := c.ops().ListExecutions.Execute(ctx, &server.ExecutionQuery{State: string(st), Limit: dashboardRows})
		if err != nil {
			return err
		}
		for _, x := range page.Executions {
			if max(x.FiredAt, x.FinishedAt) >= since {
				failures = append(failures, x)
			}
		}
	}
	slices.SortFunc(failures, func(a, b *store.Execution) int { return int(b.ID - a.ID) })
	failures = failures[:min(len(failures), dashboardRows)]
	next, err := c.ops().NextFires.Execute(ctx, &server.NextFiresQuery{Limit: dashboardRows})
	if err != nil {
		return err
	}
	trigs := next.Triggers
	names, err := c.jobNames(r, append(append(jobIDs(running.Executions), jobIDs(failures)...), triggerJobIDs(trigs)...))
	if err != nil {
		return err
	}
	dv.Running, dv.Failures = withNames(running.Executions, names), withNames(failures, names)
	for _, t := range trigs {
		dv.NextFires = append(dv.NextFires, fireRow{t, names[t.JobID]})
	}
	if dv.Nodes, err = c.nodes(r); err != nil {
		return err
	}
	if dv.Executors, err = c.executors(r, ""); err != nil {
		return err
	}
	if dv.Health, err = c.ops().NodeHealth.Execute(ctx, &struct{}{}); err != nil {
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
	names, err := c.ops().JobNames.Execute(r.Context(), &server.JobNamesQuery{IDs: ids})
	if err != nil {
		return nil, err
	}
	return *names, nil
}

func withNames(xs []*store.Execution, names map[int64]string) []execRow {
	out := make([]execRow, len(xs))
	for i, x := range xs {
		out[i] = execRow{x, names[x.JobID]}
	}
	return out
}
