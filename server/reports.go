package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/maintenance"
	"github.com/sundial-scheduler/sundial/store"
)

const dayLayout = maintenance.DayLayout

// maxReportDays bounds one report request: a year of days, each a row.
const maxReportDays = 366

// addDay counts a stored day's executions into r.
func addDay(r *api.ReportRow, d *store.ReportDay) {
	r.Running += d.Running
	r.Succeeded += d.Succeeded
	r.Failed += d.Failed
	r.Other += d.Other
	r.Total += d.Running + d.Succeeded + d.Failed + d.Other
}

// dailyReport serves the dashboard's chart: one row per day from..to, days without
// executions as zeros (as XXL-JOB's chartInfo), and the totals, of the jobs the caller may
// read (another app's job_id answers 403 before this runs).
func (s *Server) dailyReport(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	day := func(name string, def time.Time) (time.Time, error) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		t, err := time.Parse(dayLayout, v)
		if err != nil {
			return time.Time{}, invalidField(name, "want a day as YYYY-MM-DD, got %q", v)
		}
		return t, nil
	}
	now := s.clock.Now().UTC()
	to, err := day("to", time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC))
	if err != nil {
		return err
	}
	from, err := day("from", to.AddDate(0, 0, -6))
	if err != nil {
		return err
	}
	switch {
	case from.After(to):
		return invalidField("from", "%s is after to (%s)", from.Format(dayLayout), to.Format(dayLayout))
	case to.Sub(from) >= maxReportDays*24*time.Hour:
		return invalidField("to", "at most %d days per request, got %s to %s", maxReportDays, from.Format(dayLayout), to.Format(dayLayout))
	}
	jobID, err := queryID(r, "job_id")
	if err != nil {
		return err
	}
	rows, err := s.store.ReportsDaily(r.Context(), from.Format(dayLayout), to.Format(dayLayout), jobID,
		principalFrom(r.Context()).ReadScope())
	if err != nil {
		return fmt.Errorf("daily report: %w", err)
	}
	byDay := make(map[string]*store.ReportDay, len(rows))
	for _, d := range rows {
		byDay[d.Day] = d
	}
	out := api.Report{Items: []api.ReportRow{}}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		row := api.ReportRow{Day: d.Format(dayLayout)}
		if got := byDay[row.Day]; got != nil {
			addDay(&row, got)
			addDay(&out.Totals, got)
		}
		out.Items = append(out.Items, row)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
