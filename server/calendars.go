package server

import (
	"context"
	"net/http"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

func toCalendarOut(c *store.Calendar) api.Calendar {
	return api.Calendar{Name: c.Name, Description: c.Description, Spec: c.Spec, Base: c.Base, Zone: c.Zone, UpdatedAt: api.Time(c.UpdatedAt)}
}

// CalendarRef names a calendar.
type CalendarRef struct {
	Name string `json:"name"`
}

// CalendarPut creates or replaces calendar Name.
type CalendarPut struct {
	Name string `json:"name"`
	api.CalendarRequest
}

// CalendarQuery is a page of calendars by name, after After.
type CalendarQuery struct {
	After string `json:"after"`
	Limit int    `json:"limit"`
}

// CalendarPage is a page of calendars; More says another follows the last.
type CalendarPage struct {
	Calendars []*store.Calendar
	More      bool
}

// CalendarIn resolves calendar Name (with its bases) for reading days in Loc.
type CalendarIn struct {
	Name string         `json:"calendar"`
	Loc  *time.Location `json:"-"`
}

// Resolved is a calendar as the scheduler applies it.
type Resolved struct{ schedule.Calendar }

func (s *Server) putCalendar(ctx context.Context, in *CalendarPut) (*store.Calendar, error) {
	name := in.Name
	actx := s.auditedCtx(ctx, "calendar.put", "calendar", name, calendarSnapshot(name))
	if err := s.sched.PutCalendar(actx, sundial.Calendar{Name: name, Description: in.Description, Spec: in.Spec, Base: in.Base, Zone: in.Zone}); err != nil {
		return nil, err
	}
	return s.store.CalendarGet(ctx, name)
}

func (s *Server) getCalendar(ctx context.Context, in *CalendarRef) (*store.Calendar, error) {
	return s.store.CalendarGet(ctx, in.Name)
}

func (s *Server) listCalendars(ctx context.Context, in *CalendarQuery) (*CalendarPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	cs, err := s.store.CalendarList(ctx, in.After, limit+1)
	if err != nil {
		return nil, err
	}
	page := &CalendarPage{}
	page.Calendars, page.More = cut(cs, limit)
	return page, nil
}

func (s *Server) deleteCalendar(ctx context.Context, in *CalendarRef) (*struct{}, error) {
	name := in.Name
	actx := s.auditedCtx(ctx, "calendar.delete", "calendar", name, calendarSnapshot(name))
	if err := s.sched.DeleteCalendar(actx, name); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

// resolveCalendar is a calendar as the scheduler applies it, for the console's month and
// schedule preview.
func (s *Server) resolveCalendar(ctx context.Context, in *CalendarIn) (*Resolved, error) {
	cal, err := s.sched.Engine().Calendar(ctx, s.store, in.Name, in.Loc)
	if err != nil {
		return nil, err
	}
	return &Resolved{cal}, nil
}

// The calendars' HTTP binding.

func readCalendarRef(r *http.Request, in *CalendarRef) error {
	in.Name = r.PathValue("name")
	return nil
}

func readCalendarPut(r *http.Request, in *CalendarPut) error {
	in.Name = r.PathValue("name")
	return decodeOp(r, &in.CalendarRequest)
}

func readCalendarQuery(r *http.Request, in *CalendarQuery) (err error) {
	in.After = r.URL.Query().Get("after")
	in.Limit, err = pageLimit(r)
	return err
}

func writeCalendarPage(w http.ResponseWriter, _ *http.Request, p *CalendarPage) error {
	writeJSON(w, http.StatusOK, pageOut(p.Calendars, p.More, func(c *store.Calendar) string { return c.Name }, toCalendarOut))
	return nil
}
