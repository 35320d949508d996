package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

type appRow struct {
	api.App
	Instances []instanceInfo
	Running   int
	// Warning says the secret params of the app's jobs travel in clear (sundial.ClearSecretsWarning).
	Warning string
}

type appsView struct {
	Now  api.Time
	Apps []appRow
	// Orphans are live instances of apps nobody created (executors register their app).
	Orphans []instanceInfo
	// Form is the new-app form (an admin's), with its select options.
	Form                          Form
	Modes, Protocols, Generations [][2]string
}

// appsPage lists the apps with their address mode and live executor instances.
func (c *Console) appsPage(w http.ResponseWriter, r *http.Request) error {
	return c.showApps(w, r, http.StatusOK, appForm(nil))
}

func (c *Console) showApps(w http.ResponseWriter, r *http.Request, status int, form Form) error {
	apps, err := c.ops().ListApps.Execute(r.Context(), &server.AllOf{})
	if err != nil {
		return err
	}
	slices.SortFunc(*apps, func(a, b api.App) int { return strings.Compare(a.Name, b.Name) })
	ins, err := c.executors(r, "")
	if err != nil {
		return err
	}
	av := appsView{Now: api.TimeOf(c.clock.Now()), Form: form, Modes: addressModeOptions, Protocols: protocolOptions,
		Generations: generationOptions}
	byApp := map[string]*appRow{}
	for _, a := range *apps {
		av.Apps = append(av.Apps, appRow{App: a, Warning: strings.Join(a.Warnings, "; ")})
	}
	for i := range av.Apps {
		byApp[av.Apps[i].Name] = &av.Apps[i]
	}
	for _, in := range ins {
		if row := byApp[in.App]; row != nil {
			row.Instances = append(row.Instances, in)
		} else {
			av.Orphans = append(av.Orphans, in)
		}
	}
	return c.render(w, r, status, "apps", &view{Title: "Apps & executors", Nav: "apps", Data: av,
		Flash: flashText(r.URL.Query().Get("done"))})
}

func (c *Console) nodesPage(w http.ResponseWriter, r *http.Request) error {
	ns, err := c.nodes(r)
	if err != nil {
		return err
	}
	return c.render(w, r, http.StatusOK, "nodes", &view{Title: "Nodes", Nav: "nodes",
		Data: map[string]any{"Nodes": ns, "Now": api.TimeOf(c.clock.Now())}})
}

type calendarsView struct {
	Calendars []*store.Calendar
	Selected  *store.Calendar
	// Zone is the zone the month is shown in: the selected calendar's own, or UTC.
	Zone  string
	Month time.Time
	Prev  string
	Next  string
	// Weeks are the month's days, Monday first, with blanks before the first.
	Weeks [][]calDay
	Form  Form
}

type calDay struct {
	Day int // 0 for a blank
	// Excluded is "all", "part" or "".
	Excluded string
}

// calendarsPage lists the calendars and shows one's month, its excluded days marked.
func (c *Console) calendarsPage(w http.ResponseWriter, r *http.Request) error {
	return c.showCalendars(w, r, http.StatusOK, Form{Values: url.Values{}, Errors: map[string]string{}},
		flashText(r.URL.Query().Get("done")))
}

func (c *Console) showCalendars(w http.ResponseWriter, r *http.Request, status int, form Form, flash string) error {
	q := r.URL.Query()
	cals, err := c.calendars(r)
	if err != nil {
		return err
	}
	cv := calendarsView{Calendars: cals, Form: form}
	now := c.clock.Now().UTC()
	cv.Month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if m := q.Get("month"); m != "" {
		if cv.Month, err = time.Parse("2006-01", m); err != nil {
			return errBadRequest(fmt.Sprintf("month: want YYYY-MM, got %q", m))
		}
	}
	name := q.Get("name")
	if name == "" && len(cals) > 0 {
		name = cals[0].Name
	}
	for _, cal := range cals {
		if cal.Name == name {
			cv.Selected = cal
		}
	}
	if cv.Selected != nil {
		if form.Values.Get("name") == "" && status == http.StatusOK {
			cv.Form.Values = url.Values{"name": {cv.Selected.Name}, "spec": {cv.Selected.Spec},
				"base": {cv.Selected.Base}, "zone": {cv.Selected.Zone}, "description": {cv.Selected.Description}}
		}
		// A calendar with a zone of its own is shown in it: its days are that zone's days.
		loc := time.UTC
		if z := cv.Selected.Zone; z != "" {
			if loc, err = schedule.LoadZone(z); err != nil {
				return fmt.Errorf("calendar %s: %w", cv.Selected.Name, err)
			}
		}
		cv.Zone = loc.String()
		res, err := c.ops().ResolveCalendar.Execute(r.Context(), &server.CalendarIn{Name: cv.Selected.Name, Loc: loc})
		if err != nil {
			return err
		}
		cal := res.Calendar
		first := time.Date(cv.Month.Year(), cv.Month.Month(), 1, 0, 0, 0, 0, loc)
		week := make([]calDay, int(first.Weekday()+6)%7)
		for d := first; d.Month() == first.Month(); d = d.AddDate(0, 0, 1) {
			// Sampled every quarter hour: a whole day out, part of it, or none.
			out := 0
			for m := 0; m < 24*60; m += 15 {
				if !cal.Includes(d.Add(time.Duration(m) * time.Minute)) {
					out++
				}
			}
			day := calDay{Day: d.Day()}
			switch {
			case out == 24*4:
				day.Excluded = "all"
			case out > 0:
				day.Excluded = "part"
			}
			week = append(week, day)
			if len(week) == 7 {
				cv.Weeks, week = append(cv.Weeks, week), nil
			}
		}
		if len(week) > 0 {
			cv.Weeks = append(cv.Weeks, week)
		}
		cv.Prev = url.Values{"name": {name}, "month": {cv.Month.AddDate(0, -1, 0).Format("2006-01")}}.Encode()
		cv.Next = url.Values{"name": {name}, "month": {cv.Month.AddDate(0, 1, 0).Format("2006-01")}}.Encode()
	}
	return c.render(w, r, status, "calendars", &view{Title: "Calendars", Nav: "calendars", Data: cv,
		Flash: flash})
}

// calendarSave creates or replaces a calendar through PUT /api/v1/calendars/{name}.
func (c *Console) calendarSave(w http.ResponseWriter, r *http.Request) error {
	form := Form{Values: r.PostForm, Errors: map[string]string{}}
	name := r.PostFormValue("name")
	if name == "" {
		form.Errors["name"] = "must not be empty"
		return c.showCalendars(w, r, http.StatusOK, form, "")
	}
	_, err := c.ops().PutCalendar.Execute(r.Context(), &server.CalendarPut{Name: name, CalendarRequest: api.CalendarRequest{
		Description: r.PostFormValue("description"), Spec: r.PostFormValue("spec"), Base: r.PostFormValue("base"),
		Zone: r.PostFormValue("zone")}})
	if showAtField(err, form.Errors) {
		return c.showCalendars(w, r, http.StatusOK, form, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/calendars?"+url.Values{"name": {name}, "done": {"calendar"}}.Encode(), http.StatusSeeOther)
	return nil
}

// calendarDelete deletes a calendar through DELETE /api/v1/calendars/{name}; the scheduler
// refuses one a trigger or another calendar still uses, and the page says which.
func (c *Console) calendarDelete(w http.ResponseWriter, r *http.Request) error {
	name := r.PostFormValue("name")
	_, err := c.ops().DeleteCalendar.Execute(r.Context(), &server.CalendarRef{Name: name})
	if ae, _ := server.ErrorOf(err); err != nil && ae.Status == http.StatusConflict {
		form := Form{Values: url.Values{}, Errors: map[string]string{"": ae.Message}}
		return c.showCalendars(w, r, http.StatusOK, form, "")
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/calendars?done=calendar-deleted", http.StatusSeeOther)
	return nil
}
