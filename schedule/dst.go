package schedule

import (
	"fmt"
	"time"
)

// DSTPolicy says how a trigger fires at local times that a daylight-saving change repeats
// (autumn: the clock goes back and an hour happens twice) or skips (spring: the clock jumps
// forward over a gap).
type DSTPolicy int

// The DST policies.
const (
	// DSTQuartz computes fire times exactly as Quartz does (the default).
	DSTQuartz DSTPolicy = iota
	// DSTOnce fires a repeated local time once, at its first occurrence, and a local time in a
	// spring gap once, at the first instant after the gap (several such times fire once).
	DSTOnce
	// DSTOnceSkipGap fires a repeated local time once, at its first occurrence, and never a
	// local time in a spring gap.
	DSTOnceSkipGap
)

var dstNames = [...]string{DSTQuartz: "quartz", DSTOnce: "once", DSTOnceSkipGap: "once_skip_gap"}

// DSTPolicies are the policies' names, the default first.
var DSTPolicies = dstNames[:]

func (p DSTPolicy) String() string { return dstNames[p] }

// ParseDSTPolicy reads a policy's name; "" is DSTQuartz.
func ParseDSTPolicy(s string) (DSTPolicy, error) {
	if s == "" {
		return DSTQuartz, nil
	}
	for p, n := range dstNames {
		if n == s {
			return DSTPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("DST policy %q: want one of %v", s, dstNames)
}

// WithDST returns s computing under policy p. DSTQuartz returns s itself. The other policies
// compute s on the local wall clock as if it had no DST changes, then place each local time
// in the zone: once where it occurs twice, after the gap (or not at all) where it does not
// occur. A simple schedule counts elapsed time and has no local times: it is refused.
func WithDST(s Schedule, p DSTPolicy) (Schedule, error) {
	if p == DSTQuartz {
		return s, nil
	}
	w := &wallClock{orig: s, skipGap: p == DSTOnceSkipGap}
	switch s := s.(type) {
	case *Cron:
		c, err := ParseCron(s.String(), time.UTC)
		if err != nil {
			return nil, err
		}
		w.inner, w.loc = c, s.Location()
	case CalendarInterval:
		w.loc = s.loc()
		s.Location = time.UTC
		w.inner = s
	case DailyInterval:
		w.loc = s.loc()
		s.Location = time.UTC
		w.inner = s
	default:
		return nil, fmt.Errorf("DST policy %s: a %s schedule counts elapsed time and has no local times", p, s.Kind())
	}
	return w, nil
}

// DSTOf returns the policy a schedule computes under.
func DSTOf(s Schedule) DSTPolicy {
	w, ok := s.(*wallClock)
	switch {
	case !ok:
		return DSTQuartz
	case w.skipGap:
		return DSTOnceSkipGap
	}
	return DSTOnce
}

// wallClock is a schedule under DSTOnce or DSTOnceSkipGap: inner is the same schedule in UTC,
// whose instants stand for local wall times ("floating" times).
type wallClock struct {
	orig, inner Schedule
	loc         *time.Location
	skipGap     bool
}

func (w *wallClock) Kind() Kind { return w.orig.Kind() }

// unwrapDST returns the schedule a policy wraps.
func unwrapDST(s Schedule) Schedule {
	if w, ok := s.(*wallClock); ok {
		return w.orig
	}
	return s
}

// float is t's local wall time in the zone, as a UTC instant.
func (w *wallClock) float(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	l := t.In(w.loc)
	y, mo, d := l.Date()
	h, mi, s := l.Clock()
	return time.Date(y, mo, d, h, mi, s, l.Nanosecond(), time.UTC)
}

// floating is tr with its instants as local wall times, computing with the inner schedule.
func (w *wallClock) floating(tr *Trigger) *Trigger {
	ft := *tr
	ft.Schedule = w.inner
	ft.Start, ft.End, ft.Next, ft.Prev = w.float(tr.Start), w.float(tr.End), w.float(tr.Next), w.float(tr.Prev)
	return &ft
}

// maxDSTSteps bounds the wall times stepped over in one search: the wall times of a repeated
// hour (3600 for a schedule firing every second) or of one gap.
const maxDSTSteps = 1 << 16

// place returns the instant a wall time fires at, and false when it does not fire (a gap
// time under DSTOnceSkipGap).
func (w *wallClock) place(wall time.Time) (time.Time, bool) {
	t, kind := Resolve(wall, w.loc)
	if kind == WallGap && w.skipGap {
		return time.Time{}, false
	}
	return t, true
}

// search steps the inner schedule's wall times from first until one is placed at an instant
// accepted by ok.
func (w *wallClock) search(ft *Trigger, wall time.Time, found bool, ok func(time.Time) bool) (time.Time, bool) {
	for i := 0; found && i < maxDSTSteps; i++ {
		if t, fires := w.place(wall); fires && ok(t) {
			return t, true
		}
		wall, found = w.inner.fireTimeAfter(ft, wall)
	}
	return time.Time{}, false
}

func (w *wallClock) firstFireTime(tr *Trigger) (time.Time, bool) {
	ft := w.floating(tr)
	wall, found := w.inner.firstFireTime(ft)
	start := tr.Start.Truncate(time.Second)
	return w.search(ft, wall, found, func(t time.Time) bool { return !t.Before(start) })
}

func (w *wallClock) fireTimeAfter(tr *Trigger, t time.Time) (time.Time, bool) {
	ft := w.floating(tr)
	wall, found := w.inner.fireTimeAfter(ft, w.float(t))
	return w.search(ft, wall, found, func(c time.Time) bool { return c.After(t) })
}

func (w *wallClock) validate(tr *Trigger) error { return w.orig.validate(tr) }

func (w *wallClock) updateAfterMisfire(tr *Trigger, cal Calendar, now time.Time) {
	updateAfterMisfireRegular(tr, cal, now)
}

// WallKind says how a local wall time exists in a zone.
type WallKind int

// The kinds of local times.
const (
	// WallNormal local times occur once.
	WallNormal WallKind = iota
	// WallOverlap local times occur twice: the clock went back over them.
	WallOverlap
	// WallGap local times do not occur: the clock jumped forward over them.
	WallGap
)

func (k WallKind) String() string { return [...]string{"", "overlap", "gap"}[k] }

// Resolve places the local wall time wall (its fields read as a clock in loc) in loc: the
// instant it occurs at, the first of two in an overlap, or for a time in a gap the instant
// the clock jumped at (the first valid instant after the gap).
func Resolve(wall time.Time, loc *time.Location) (time.Time, WallKind) {
	wu := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	// One change at most lies within a day and a quarter of any instant (every zone's changes
	// are months apart), so the offsets on either side bound the candidates.
	_, before := wu.Add(-30 * time.Hour).In(loc).Zone()
	_, after := wu.Add(30 * time.Hour).In(loc).Zone()
	var valid []time.Time
	for _, off := range []int{before, after} {
		c := wu.Add(-time.Duration(off) * time.Second)
		if _, o := c.In(loc).Zone(); o == off && (len(valid) == 0 || !valid[0].Equal(c)) {
			valid = append(valid, c)
		}
	}
	switch len(valid) {
	case 2:
		if valid[1].Before(valid[0]) {
			valid[0] = valid[1]
		}
		return valid[0].In(loc), WallOverlap
	case 1:
		return valid[0].In(loc), WallNormal
	}
	// In a gap: the change happened between the two candidates; the later one is past it.
	c := wu.Add(-time.Duration(before) * time.Second)
	start, _ := c.In(loc).ZoneBounds()
	return start.In(loc), WallGap
}

// DSTMark says whether the fire at t falls where a DST change makes local times ambiguous:
// "overlap" when t's local time occurs twice that day (either occurrence), "gap" when t is
// less than the gap's length after a spring-forward change, where the fires of the skipped
// local times land; "" otherwise, and for the zone-free simple schedules (loc nil).
func DSTMark(t time.Time, loc *time.Location) string {
	if loc == nil {
		return ""
	}
	l := t.In(loc)
	start, _ := l.ZoneBounds()
	if start.IsZero() {
		return ""
	}
	_, now := l.Zone()
	_, prev := start.Add(-time.Nanosecond).In(loc).Zone()
	gapLen := time.Duration(now-prev) * time.Second
	switch {
	case gapLen > 0 && t.Sub(start) < gapLen:
		return WallGap.String()
	case gapLen < 0 && t.Sub(start) < -gapLen:
		return WallOverlap.String()
	}
	// The first occurrence of a repeated time lies before the change that repeats it.
	_, end := l.ZoneBounds()
	if !end.IsZero() {
		_, next := end.In(loc).Zone()
		if back := time.Duration(now-next) * time.Second; back > 0 && end.Sub(t) <= back {
			return WallOverlap.String()
		}
	}
	return ""
}
