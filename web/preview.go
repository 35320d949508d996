package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/server"
)

// previewCount is how many fire times the editor previews.
const previewCount = 10

type previewView struct {
	// Field is the input the error belongs to (its full name), Error the message.
	Field, Error string
	Zone         string
	Times        []previewTime
	Warnings     []string
	// Ends says the schedule fires fewer than previewCount more times.
	Ends bool
	// Blank says no expression is typed yet: nothing to preview, and no error.
	Blank bool
	// Slots are the trigger fields' error slots, swapped out of band: the error at its
	// field and the others cleared.
	Slots []errSlot
}

type errSlot struct{ ID, Msg string }

type previewTime struct {
	At string
	// Note tells of a daylight-saving change at this fire.
	Note string
	// Zone, for a trigger of several zones, is the zone the fire is in.
	Zone string
	at   time.Time
}

// preview answers the editor's htmx request as the schedule is typed: the next fire times in
// the trigger's zone (after its calendar), or the error at the field that caused it, and
// Quartz's reading of a surprising cron expression. The saved trigger is validated by the
// API; this only shows what it will do.
func (c *Console) preview(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	prefix := q.Get("prefix")
	if prefix != "" && prefix != newTriggerPrefix {
		return errBadRequest("prefix: want empty or " + newTriggerPrefix)
	}
	pv := c.previewOf(r, q, prefix)
	for _, fd := range triggerCommon {
		pv.Slots = append(pv.Slots, errSlot{ID: fieldID(prefix + fd.path)})
	}
	pv.Slots = append(pv.Slots, errSlot{ID: fieldID(prefix + "kind")})
	for _, k := range []string{"cron", "simple", "calendar_interval", "daily_interval"} {
		for _, fd := range triggerKinds[k] {
			pv.Slots = append(pv.Slots, errSlot{ID: fieldID(prefix + fd.path)})
		}
	}
	for i := range pv.Slots {
		if pv.Field != "" && pv.Slots[i].ID == fieldID(pv.Field) {
			pv.Slots[i].Msg = pv.Error
		}
	}
	return c.renderFragment(w, r, "editor", "preview", pv)
}

func (c *Console) previewOf(r *http.Request, q url.Values, prefix string) previewView {
	get := func(name string) string { return strings.TrimSpace(q.Get(prefix + name)) }
	fail := func(field, format string, args ...any) previewView {
		return previewView{Field: prefix + field, Error: fmt.Sprintf(format, args...)}
	}
	zone := get("time_zone")
	if zone == "" {
		zone = "UTC"
	}
	loc, err := schedule.LoadZone(zone)
	if err != nil {
		return fail("time_zone", "%v", err)
	}
	// The Zones input lists the zones besides the time zone (triggerJSON).
	zones := append([]string{zone}, strings.FieldsFunc(get("zones"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
	kind := get("kind")
	if kind == "" {
		kind = "cron"
	}
	if kind == "cron" && get("cron") == "" {
		return previewView{Blank: true}
	}
	field, sched, perr := buildSchedule(q, prefix)
	if perr != "" {
		return fail(field, "%s", perr)
	}
	pv := previewView{Zone: strings.Join(zones, ", ")}
	if cr, ok := sched.(*schedule.Cron); ok {
		pv.Warnings = cr.Warnings()
	}
	// The DST policy moves the times next to a change; a jitter's offsets need the stored
	// trigger's id, so the trigger's own preview (GET /triggers/{id}/next) shows those.
	dst, err := schedule.ParseDSTPolicy(get("dst"))
	if err != nil {
		return fail("dst", "%v", err)
	}
	if _, err = schedule.WithDST(sched, dst); err != nil {
		return fail("dst", "%v", err)
	}
	start := c.clock.Now()
	if s := get("start"); s != "" {
		if start, err = time.Parse(time.RFC3339, s); err != nil {
			return fail("start", "want a time like 2026-01-02T15:04:05Z, got %q", s)
		}
	}
	var end time.Time
	if s := get("end"); s != "" {
		if end, err = time.Parse(time.RFC3339, s); err != nil {
			return fail("end", "want a time like 2026-01-02T15:04:05Z, got %q", s)
		}
	}
	// A trigger of several zones fires the schedule in each: the same times listed per zone,
	// merged in time order (the same instant in two zones is two fires).
	ends := true
	for i, z := range zones {
		zloc := loc
		if i > 0 || z != zone {
			if zloc, err = schedule.LoadZone(z); err != nil {
				return fail("zones", "%v", err)
			}
		}
		zs, err := schedule.DecodeSpec(sched.Kind(), schedule.EncodeSpec(sched), zloc)
		if err == nil {
			zs, err = schedule.WithDST(zs, dst)
		}
		if err != nil {
			return fail(kindField(kind), "%v", err)
		}
		tr := &schedule.Trigger{Schedule: zs, Start: start, End: end}
		if err := tr.Validate(); err != nil {
			return fail(kindField(kind), "%v", err)
		}
		var cal schedule.Calendar
		if name := get("calendar"); name != "" {
			res, err := c.ops().ResolveCalendar.Execute(r.Context(), &server.CalendarIn{Name: name, Loc: zloc})
			if err != nil {
				return fail("calendar", "%v", err)
			}
			cal = res.Calendar
		}
		next, err := tr.ComputeFirst(cal)
		if err != nil {
			return fail(kindField(kind), "%v", err)
		}
		var prev time.Time
		n := 0
		for ; n < previewCount && !next.IsZero(); n++ {
			pt := previewTime{At: next.In(zloc).Format("Mon 2006-01-02 15:04:05 MST"), Note: dstNote(zs, prev, next, zloc), at: next}
			if len(zones) > 1 {
				pt.Zone = z
			}
			pv.Times = append(pv.Times, pt)
			tr.Triggered(cal)
			prev, next = next, tr.Next
		}
		ends = ends && n < previewCount
	}
	slices.SortStableFunc(pv.Times, func(a, b previewTime) int { return a.at.Compare(b.at) })
	pv.Times = pv.Times[:min(len(pv.Times), previewCount)]
	pv.Ends = ends && len(pv.Times) < previewCount
	return pv
}

// kindField is the input that carries a kind's schedule, where its errors are shown.
func kindField(kind string) string {
	switch kind {
	case "simple":
		return "every_ms"
	case "once":
		return "start"
	case "calendar_interval":
		return "calendar_interval.interval"
	case "daily_interval":
		return "daily_interval.interval"
	}
	return "cron"
}

// buildSchedule reads the editor's schedule fields as the API reads a trigger's
// (api.Schedule.Build); on error it names the field.
func buildSchedule(q url.Values, prefix string) (field string, s schedule.Schedule, msg string) {
	var as api.Schedule
	obj, err := triggerJSON(q, prefix)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(obj); err == nil {
			err = json.Unmarshal(b, &as)
		}
	}
	if err == nil {
		s, err = as.Build()
	}
	var fe *formError
	var se *schedule.FieldError
	switch {
	case errors.As(err, &fe):
		return strings.TrimPrefix(fe.field, prefix), nil, fe.msg
	case errors.As(err, &se):
		return se.Field, nil, se.Err.Error()
	case err != nil:
		return "kind", nil, err.Error()
	}
	return "", s, ""
}

// dstNote tells when a fire falls where the zone's clocks change: a wall time the clocks
// skip (the gap moved the fire, or a daily time in it did not fire) or one that occurs twice
// (the overlap, where it fires once). prev is the fire before (zero for the first).
func dstNote(s schedule.Schedule, prev, at time.Time, loc *time.Location) string {
	if c, ok := s.(*schedule.Cron); ok && !c.Matches(at) {
		return "moved: the clocks skip this wall time (DST gap)"
	}
	wall := at.In(loc)
	_, off := wall.Zone()
	for _, d := range []time.Duration{-time.Hour, time.Hour} {
		other := at.Add(d).In(loc)
		if _, o := other.Zone(); o != off && other.Format("15:04:05") == wall.Format("15:04:05") {
			return "this wall time occurs twice (DST overlap); it fires once"
		}
	}
	if prev.IsZero() {
		return ""
	}
	if _, before := prev.In(loc).Zone(); before != off {
		// The last instant with the earlier offset, to the second.
		lo, hi := prev, at
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2)
			if _, o := mid.In(loc).Zone(); o == before {
				lo = mid
			} else {
				hi = mid
			}
		}
		change := hi.In(loc).Format("2006-01-02 15:04 MST")
		if off > before {
			return fmt.Sprintf("the clocks went forward %s at %s (DST gap): a fire at a skipped time did not happen",
				shift(off-before), change)
		}
		return fmt.Sprintf("the clocks went back %s at %s (DST overlap): repeated times fire once",
			shift(before-off), change)
	}
	return ""
}

// shift shows a clock change: "1 h", "30 min".
func shift(seconds int) string {
	if seconds%3600 == 0 {
		return fmt.Sprintf("%d h", seconds/3600)
	}
	return fmt.Sprintf("%d min", seconds/60)
}
