package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

type calendarIn struct {
	Description string `json:"description"`
	// Spec is one calendar in the form `sundial schedule next --calendar` takes:
	// holiday:2024-12-25, weekly:1,7, monthly:1,15, annual:12-25, daily:12:00-13:00, cron:EXPR.
	Spec string `json:"spec"`
	// Base names another stored calendar whose exclusions add to this one's.
	Base string `json:"base"`
}

type calendarOut struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Spec        string `json:"spec"`
	Base        string `json:"base,omitempty"`
	UpdatedAt   msTime `json:"updated_at"`
}

func toCalendarOut(c *store.Calendar) calendarOut {
	return calendarOut{Name: c.Name, Description: c.Description, Spec: c.Spec, Base: c.Base, UpdatedAt: msTime(c.UpdatedAt)}
}

func (s *Server) putCalendar(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var in calendarIn
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Spec == "" {
		return invalidField("spec", "must not be empty (e.g. holiday:2024-12-25 or weekly:1,7)")
	}
	if _, err := schedule.ParseCalendarSpec(in.Spec, time.UTC); err != nil {
		return invalidField("spec", "%v", err)
	}
	if in.Base == name {
		return invalidField("base", "a calendar cannot be its own base")
	}
	c := &store.Calendar{Name: name, Description: in.Description, Spec: in.Spec, Base: in.Base}
	if err := s.store.CalendarPut(r.Context(), c); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return invalidField("base", "no calendar %q is stored", in.Base)
		}
		return err
	}
	writeJSON(w, http.StatusOK, toCalendarOut(c))
	return nil
}

func (s *Server) getCalendar(w http.ResponseWriter, r *http.Request) error {
	c, err := s.store.CalendarGet(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toCalendarOut(c))
	return nil
}

func (s *Server) listCalendars(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	cs, err := s.store.CalendarList(r.Context(), r.URL.Query().Get("after"), limit+1)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(cs, limit, func(c *store.Calendar) string { return c.Name }, toCalendarOut))
	return nil
}

func (s *Server) deleteCalendar(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.CalendarDelete(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
