package quartz

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/schedule"
)

// Options are the facts a Quartz database does not hold, and which of its schedulers to read.
type Options struct {
	// Prefix is the tables' prefix (org.quartz.jobStore.tablePrefix); default "QRTZ_".
	Prefix string
	// SchedName is the scheduler (org.quartz.scheduler.instanceName, the SCHED_NAME column)
	// to import; empty: the only one the tables hold.
	SchedName string
	// Zone is the IANA name of the Quartz JVM's default zone, which daily-interval triggers,
	// and calendars and cron or calendar-interval triggers without a zone of their own, use.
	// Required only when such rows exist.
	Zone string
	// Source names the database in the plan (a redacted DSN).
	Source string
}

// allGroupsPaused is the PAUSED_TRIGGER_GRPS row Quartz's pauseAll() writes.
const allGroupsPaused = "_$_ALL_GROUPS_PAUSED_$_"

// Read reads one scheduler of a Quartz store into a plan.
func Read(ctx context.Context, db *DB, opt Options) (*importer.Plan, error) {
	if opt.Prefix == "" {
		opt.Prefix = "QRTZ_"
	}
	if !validPrefix.MatchString(opt.Prefix) {
		return nil, fmt.Errorf("quartz: --table-prefix %q: want letters, digits and _ (as in QRTZ_)", opt.Prefix)
	}
	names, err := schedulerNames(ctx, db, opt.Prefix)
	if err != nil {
		return nil, err
	}
	switch {
	case opt.SchedName != "":
		found := false
		for _, n := range names {
			found = found || n == opt.SchedName
		}
		if !found {
			return nil, fmt.Errorf("quartz: no scheduler %q in the %s tables (they hold: %s)", opt.SchedName, opt.Prefix, list(names))
		}
	case len(names) == 1:
		opt.SchedName = names[0]
	case len(names) == 0:
		return nil, fmt.Errorf("quartz: the %s tables hold no jobs, triggers or calendars", opt.Prefix)
	default:
		return nil, fmt.Errorf("quartz: the %s tables hold several schedulers (%s): choose one with --sched-name", opt.Prefix, list(names))
	}
	r := &reader{db: db, prefix: opt.Prefix, sched: opt.SchedName}
	st, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	m := &mapper{opt: opt, st: st, calZone: map[string]string{},
		p: &importer.Plan{Source: fmt.Sprintf("Quartz scheduler %q (tables %s*) at %s", opt.SchedName, opt.Prefix, opt.Source)}}
	if err := m.defaultZone(); err != nil {
		return nil, err
	}
	m.p.Notes = append(m.p.Notes, "each job runs the handler named after its Quartz job class (JOB_CLASS_NAME): "+
		"register a handler of that name in the program embedding Sundial, or on an app's executors")
	for _, name := range st.calNames {
		m.calendar(name)
	}
	jobs := map[[2]string]*importer.Job{}
	for _, j := range st.jobs {
		if ij := m.job(j); ij != nil {
			jobs[[2]string{j.group, j.name}] = ij
		}
	}
	for _, t := range st.triggers {
		m.trigger(t, jobs)
	}
	for _, g := range st.pausedGroups {
		if g == allGroupsPaused {
			m.unmapped("paused groups: "+allGroupsPaused, "Quartz's pauseAll() also pauses groups created later; "+
				"Sundial pauses groups by name: the paused groups are imported, run 'sundial trigger pause' for new ones")
			continue
		}
		m.p.PausedGroups = append(m.p.PausedGroups, g)
	}
	return m.p, nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

type mapper struct {
	opt Options
	st  *store
	p   *importer.Plan
	// def is the Quartz JVM's default zone (--zone); nil when not given.
	def *time.Location
	// calZone is each imported calendar's zone; calendars not imported are absent.
	calZone map[string]string
	// calWhyNot says why a calendar is not imported.
	calWhyNot map[string]string
}

func (m *mapper) unmapped(item, format string, args ...any) {
	m.p.Unmapped = append(m.p.Unmapped, importer.Unmapped{Item: item, Reason: fmt.Sprintf(format, args...)})
}

// defaultZone loads --zone, and refuses to go on without it when a row needs the JVM's
// default zone.
func (m *mapper) defaultZone() error {
	var needs []string
	for _, t := range m.st.triggers {
		switch {
		case t.kind == "DAILY_I":
			needs = append(needs, "daily-interval trigger "+t.group+"."+t.name)
		case t.kind == "CRON" && t.cronZone == "":
			needs = append(needs, "cron trigger "+t.group+"."+t.name+" (no TIME_ZONE_ID)")
		case t.kind == "CAL_INT" && t.str2 == "":
			needs = append(needs, "calendar-interval trigger "+t.group+"."+t.name+" (no zone)")
		}
	}
	for _, n := range m.st.calNames {
		if c, err := decodeCalendar(m.st.calendars[n]); err == nil {
			for _, mem := range c.members {
				if mem.zone == "" {
					needs = append(needs, "calendar "+n+" (no time zone)")
					break
				}
			}
		}
	}
	if m.opt.Zone == "" {
		if len(needs) > 0 {
			return fmt.Errorf("quartz: %s and %d more use the Quartz JVM's default zone, which the database does not record: "+
				"give it with --zone (e.g. --zone Europe/Paris)", needs[0], len(needs)-1)
		}
		return nil
	}
	loc, err := schedule.LoadZone(m.opt.Zone)
	if err != nil {
		return fmt.Errorf("quartz: --zone: %w", err)
	}
	m.def = loc
	if len(needs) > 0 {
		m.p.Notes = append(m.p.Notes, fmt.Sprintf("%d triggers and calendars without a zone of their own are read in %s (--zone)", len(needs), m.opt.Zone))
	}
	return nil
}

// zone resolves a Java zone ID, "" meaning the JVM's default.
func (m *mapper) zone(id string) (*time.Location, string, error) {
	if id == "" {
		return m.def, m.opt.Zone, nil
	}
	loc, err := loadZone(id)
	if err != nil {
		return nil, "", err
	}
	return loc, id, nil
}

func (m *mapper) calendar(name string) {
	if m.calWhyNot == nil {
		m.calWhyNot = map[string]string{}
	}
	item := "calendar " + name
	fail := func(format string, args ...any) {
		m.calWhyNot[name] = fmt.Sprintf(format, args...)
		m.unmapped(item, format, args...)
	}
	c, err := decodeCalendar(m.st.calendars[name])
	if err != nil {
		fail("%v", err)
		return
	}
	// Each calendar of a Quartz chain is read in its own zone. Consecutive members in one zone
	// make one Sundial calendar; where the zone changes, the rest of the chain becomes the
	// calendar's base, named after it ("NAME~2", ...), whose links are read each in its own
	// zone (schedule.BuildCalendarChain), as Quartz reads them.
	type segment struct {
		loc      *time.Location
		zoneName string
		specs    []string
	}
	var segs []*segment
	for _, mem := range c.members {
		l, n, err := m.zone(mem.zone)
		if err != nil {
			fail("%s: %v", mem.class, err)
			return
		}
		if len(segs) == 0 || segs[len(segs)-1].loc.String() != l.String() {
			segs = append(segs, &segment{loc: l, zoneName: n})
		}
		last := segs[len(segs)-1]
		last.specs = append(last.specs, mem.spec(l))
	}
	if len(segs) == 0 {
		fail("it is an empty chain")
		return
	}
	names := make([]string, len(segs))
	for i := range segs {
		names[i] = name
		if i > 0 {
			names[i] = fmt.Sprintf("%s~%d", name, i+1)
			if _, taken := m.st.calendars[names[i]]; taken {
				fail("its chain mixes zones, and %s, the name its base in another zone would take, is a calendar of its own", names[i])
				return
			}
		}
	}
	cals := make([]*importer.Calendar, len(segs))
	for i, sg := range segs {
		spec := strings.Join(sg.specs, "+")
		if _, err := schedule.ParseCalendarSpec(spec, sg.loc); err != nil {
			fail("%v", err)
			return
		}
		cal := sundial.Calendar{Name: names[i], Spec: spec, Zone: sg.loc.String()}
		source := fmt.Sprintf("%s (%s, zone %s)", item, shortClasses(c), sg.zoneName)
		if i > 0 {
			cal.Description = fmt.Sprintf("the calendars of %s's chain in %s", name, sg.zoneName)
			source = fmt.Sprintf("%s, its base calendars in %s", item, sg.zoneName)
		} else {
			cal.Description = c.description
		}
		if i+1 < len(segs) {
			cal.Base = names[i+1]
		}
		cals[i] = &importer.Calendar{Calendar: cal, Source: source}
	}
	// The calendar keeps its zone (its own TimeZone, or the JVM's default when it has none):
	// Quartz reads a calendar in its zone whatever the zone of the trigger it modifies.
	m.calZone[name] = segs[0].loc.String()
	m.p.Calendars = append(m.p.Calendars, cals...)
}

func shortClasses(c *calendar) string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.class[strings.LastIndex(m.class, ".")+1:])
	}
	return strings.Join(out, " on ")
}

func (m *mapper) job(j *jobRow) *importer.Job {
	item := "job " + j.group + "." + j.name
	data, err := decodeJobData(j.data)
	if err != nil {
		m.unmapped(item, "job data: %v", err)
		return nil
	}
	ij := &importer.Job{Job: sundial.Job{Group: j.group, Name: j.name, Description: j.description, Handler: j.class,
		Data: data, Concurrency: sundial.Allow, PersistData: j.updateData, RequestsRecovery: j.recovery},
		Source: fmt.Sprintf("%s (%s)", item, j.class)}
	if j.nonConcurrent {
		ij.Concurrency = sundial.Serial // @DisallowConcurrentExecution
	}
	m.p.Jobs = append(m.p.Jobs, ij)
	return ij
}

func (m *mapper) trigger(t *triggerRow, jobs map[[2]string]*importer.Job) {
	item := "trigger " + t.group + "." + t.name
	j := jobs[[2]string{t.jobGroup, t.jobName}]
	if j == nil {
		m.unmapped(item, "its job %s.%s is not imported", t.jobGroup, t.jobName)
		return
	}
	tr, err := m.mapTrigger(t)
	if err != nil {
		m.unmapped(item, "%v", err)
		return
	}
	if t.priority == 0 {
		m.unmapped(item+": priority 0", "Sundial reads priority 0 as its default, 5: imported with 5, "+
			"so among triggers due at the same millisecond it no longer comes after those of priority 1 to 4")
	}
	j.Triggers = append(j.Triggers, tr)
}

// mapTrigger maps one trigger row; an error says why it cannot be imported.
func (m *mapper) mapTrigger(t *triggerRow) (*importer.Trigger, error) {
	switch t.state {
	case "COMPLETE":
		return nil, fmt.Errorf("it is COMPLETE in Quartz: it will not fire again")
	case "ERROR":
		return nil, fmt.Errorf("it is in Quartz's ERROR state (its job could not be run): fix the job and reset it in Quartz first")
	}
	// A trigger's own job data is merged over its job's at each fire, by Sundial as by Quartz.
	data, err := decodeJobData(t.data)
	if err != nil {
		return nil, fmt.Errorf("trigger job data: %v", err)
	}
	tr := &importer.Trigger{Trigger: sundial.Trigger{Group: t.group, Name: t.name, Description: t.description,
		Calendar: t.calendar, Priority: t.priority, Start: time.UnixMilli(t.start), Data: data}}
	if t.end > 0 {
		tr.End = time.UnixMilli(t.end)
	}
	var loc *time.Location
	var zoneName string
	switch t.kind {
	case "CRON":
		if loc, zoneName, err = m.zone(t.cronZone); err != nil {
			return nil, err
		}
		c, err := schedule.ParseCron(t.cronExpr, loc)
		if err != nil {
			return nil, fmt.Errorf("cron expression %q: %v", t.cronExpr, err)
		}
		tr.Schedule = c
	case "SIMPLE":
		tr.Schedule = schedule.Simple{Interval: time.Duration(t.repeatInterval) * time.Millisecond, RepeatCount: int(t.repeatCount)}
		tr.TimesFired = t.timesTriggered
	case "CAL_INT", "DAILY_I":
		if !t.hasProps {
			return nil, fmt.Errorf("its %sSIMPROP_TRIGGERS row is missing", m.opt.Prefix)
		}
		unit, err := schedule.ParseIntervalUnit(t.str1)
		if err != nil {
			return nil, err
		}
		tr.TimesFired = t.int2
		if t.kind == "CAL_INT" {
			if loc, zoneName, err = m.zone(t.str2); err != nil {
				return nil, err
			}
			tr.Schedule = schedule.CalendarInterval{Interval: int(t.int1), Unit: unit, Location: loc,
				PreserveHourOfDay: t.bool1, SkipDayIfHourDoesNotExist: t.bool2}
			break
		}
		loc, zoneName = m.def, m.opt.Zone
		d, err := dailyInterval(t, unit, loc)
		if err != nil {
			return nil, err
		}
		tr.Schedule = d
	case "BLOB":
		return nil, fmt.Errorf("a BLOB trigger (a Java-serialized trigger of an application's own class): what it fires is in that class's code")
	default:
		return nil, fmt.Errorf("unknown trigger type %q", t.kind)
	}
	if t.calendar != "" {
		// A calendar in another zone than its trigger's is read in its own (its Zone).
		why, bad := m.calWhyNot[t.calendar]
		cz, ok := m.calZone[t.calendar]
		switch {
		case bad:
			return nil, fmt.Errorf("its calendar %s is not imported (%s)", t.calendar, firstClause(why))
		case !ok:
			return nil, fmt.Errorf("its calendar %s does not exist", t.calendar)
		case loc == nil: // a simple trigger has no zone: it takes its calendar's
			zoneName = cz
		}
	}
	tr.TimeZone = zoneName
	kind := tr.Schedule.Kind()
	if tr.Misfire, err = schedule.QuartzMisfireInstruction(kind, t.misfire); err != nil {
		return nil, err
	}
	if t.next > 0 {
		tr.NextFire = time.UnixMilli(t.next)
	}
	if t.prev > 0 {
		tr.PrevFire = time.UnixMilli(t.prev)
	}
	tr.Paused = t.state == "PAUSED" || t.state == "PAUSED_BLOCKED"
	return tr, nil
}

// dailyInterval maps a DAILY_I row: STR_PROP_2 the days (1 = Sunday), STR_PROP_3
// "sh,sm,ss,eh,em,es", LONG_PROP_1 the repeat count.
func dailyInterval(t *triggerRow, unit schedule.IntervalUnit, loc *time.Location) (schedule.DailyInterval, error) {
	d := schedule.DailyInterval{Interval: int(t.int1), Unit: unit, RepeatCount: int(t.long1), Location: loc}
	if strings.TrimSpace(t.str2) != "" {
		for _, s := range strings.Split(t.str2, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return d, fmt.Errorf("days of week %q: %v", t.str2, err)
			}
			wd, err := schedule.QuartzDayOfWeek(n)
			if err != nil {
				return d, err
			}
			d.Days = append(d.Days, wd)
		}
		if len(d.Days) == 7 {
			d.Days = nil // every day
		}
	}
	parts := strings.Split(t.str3, ",")
	if len(parts) != 6 {
		return d, fmt.Errorf("times of day %q: want sh,sm,ss,eh,em,es", t.str3)
	}
	var v [6]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return d, fmt.Errorf("times of day %q: %v", t.str3, err)
		}
		v[i] = n
	}
	d.StartTimeOfDay = schedule.TimeOfDay{Hour: v[0], Minute: v[1], Second: v[2]}
	d.EndTimeOfDay = schedule.TimeOfDay{Hour: v[3], Minute: v[4], Second: v[5]}
	return d, nil
}

// firstClause shortens a reason repeated from another item to its first clause.
func firstClause(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}
