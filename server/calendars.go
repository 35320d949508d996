package server

import (
	"net/http"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

func toCalendarOut(c *store.Calendar) api.Calendar {
	return api.Calendar{Name: c.Name, Description: c.Description, Spec: c.Spec, Base: c.Base, Zone: c.Zone, UpdatedAt: api.Time(c.UpdatedAt)}
}

func (s *Server) putCalendar(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var in api.CalendarRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	ctx := s.audited(r, "calendar.put", "calendar", name, calendarSnapshot(name))
	if err := s.sched.PutCalendar(ctx, sundial.Calendar{Name: name, Description: in.Description, Spec: in.Spec, Base: in.Base, Zone: in.Zone}); err != nil {
		return err
	}
	c, err := s.store.CalendarGet(r.Context(), name)
	if err != nil {
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
	name := r.PathValue("name")
	ctx := s.audited(r, "calendar.delete", "calendar", name, calendarSnapshot(name))
	if err := s.sched.DeleteCalendar(ctx, name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
