package xxljob

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	xxlproto "github.com/sundial-scheduler/sundial/xxljob"
)

// Options are the facts an XXL-JOB database does not hold.
type Options struct {
	// Zone is the IANA zone XXL-JOB's admin evaluated cron expressions in (its JVM's default
	// zone, which the database does not record). Required when a CRON job exists.
	Zone string
	// Generation is the executors' protocol generation ("2.x", "3.3" or "3.5"); empty: the
	// one the schema shows (2.x to 3.3.x look alike: 2.x is assumed, with a note).
	Generation string
	// Now is the time FIX_RATE jobs are phased from; zero: time.Now().
	Now time.Time
	// Source names the database in the plan (a redacted DSN).
	Source string
}

// routings maps executor_route_strategy to Sundial's routing strategies: all ten exist.
var routings = map[string]string{
	"FIRST": "first", "LAST": "last", "ROUND": "round_robin", "RANDOM": "random",
	"CONSISTENT_HASH": "consistent_hash", "LEAST_FREQUENTLY_USED": "least_frequently_used",
	"LEAST_RECENTLY_USED": "least_recently_used", "FAILOVER": "failover", "BUSYOVER": "busy_over",
	"SHARDING_BROADCAST": "sharding_broadcast",
}

// blocks maps executor_block_strategy to a concurrency policy.
var blocks = map[string]sundial.Concurrency{
	"SERIAL_EXECUTION": sundial.Serial, "DISCARD_LATER": sundial.Discard, "COVER_EARLY": sundial.Replace,
}

// GlueHandlers maps a GLUE type to the script handler a Sundial job of an xxl-job app has:
// the job's Params is the GLUE source, and the dispatcher sends the type back by this table.
var GlueHandlers = map[string]string{
	"GLUE_GROOVY": "groovy", "GLUE_SHELL": sundial.ScriptHandler, "GLUE_PYTHON": "python", "GLUE_PYTHON2": "python2",
	"GLUE_NODEJS": "nodejs", "GLUE_POWERSHELL": "powershell", "GLUE_PHP": "php",
}

// JobName is the name of the Sundial job imported from XXL-JOB job id: the id is the one
// stable key (descriptions repeat and change), so a second import finds the job again.
func JobName(id int64) string { return fmt.Sprintf("xxl-%d", id) }

// Read reads the XXL-JOB database into a plan.
func Read(ctx context.Context, db *sql.DB, opt Options) (*importer.Plan, error) {
	s, err := readSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	groups, err := readGroups(ctx, db, s)
	if err != nil {
		return nil, err
	}
	jobs, err := readJobs(ctx, db, s)
	if err != nil {
		return nil, err
	}
	glues, err := readGlues(ctx, db)
	if err != nil {
		return nil, err
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	p := &importer.Plan{Source: fmt.Sprintf("XXL-JOB (%s) at %s", s.shape(), opt.Source)}
	gen, sure := s.generation()
	switch {
	case opt.Generation != "":
		g, err := xxlproto.ParseGeneration(opt.Generation)
		if err != nil {
			return nil, fmt.Errorf("xxljob: --generation: %w", err)
		}
		gen = string(g)
	case !sure:
		p.Notes = append(p.Notes, "protocol generation 2.x assumed: the schemas of 2.x to 3.3.x look alike; "+
			"give --generation 3.3 if the executors run XXL-JOB 3.3.x")
	}
	if !s.token {
		p.Notes = append(p.Notes, "XXL-JOB before 3.5 has one access token for all executors, in the admin's properties "+
			"(xxl.job.accessToken), not in its database: set each app's XXL-JOB token in Sundial")
	}
	m := &mapper{p: p, opt: opt, gen: gen, groups: map[int64]group{}, jobGroup: map[int64]string{}}
	for _, g := range groups {
		m.groups[g.id] = g
		m.app(g)
	}
	for _, j := range jobs {
		if g, ok := m.groups[j.group]; ok {
			m.jobGroup[j.id] = g.appName
		}
	}
	var loc *time.Location
	for _, j := range jobs {
		if (j.scheduleType == "CRON") && loc == nil {
			if opt.Zone == "" {
				return nil, fmt.Errorf("xxljob: the XXL-JOB admin evaluated cron expressions in its JVM's default zone, " +
					"which its database does not record: give it with --zone (e.g. --zone Asia/Shanghai)")
			}
			if loc, err = schedule.LoadZone(opt.Zone); err != nil {
				return nil, fmt.Errorf("xxljob: --zone: %w", err)
			}
			p.Notes = append(p.Notes, "cron expressions are read in "+opt.Zone+" (--zone)")
		}
	}
	for _, j := range jobs {
		m.job(j, glues[j.id])
	}
	for _, j := range p.Jobs {
		if len(j.AlarmTargets) > 0 {
			p.Notes = append(p.Notes, "alarm e-mails are sent by the leader node's mail server: start it with --smtp-addr and --smtp-from")
			break
		}
	}
	return p, nil
}

type mapper struct {
	p        *importer.Plan
	opt      Options
	gen      string
	groups   map[int64]group
	jobGroup map[int64]string // job id → its app name
}

func (m *mapper) unmapped(item, format string, args ...any) {
	m.p.Unmapped = append(m.p.Unmapped, importer.Unmapped{Item: item, Reason: fmt.Sprintf(format, args...)})
}

func (m *mapper) app(g group) {
	src := fmt.Sprintf("xxl_job_group %d (%s)", g.id, g.appName)
	a := &importer.App{App: sundial.App{Name: g.appName, Title: g.title, AddressMode: store.AddressAuto, Protocol: store.ProtocolXXLJob},
		Generation: m.gen, Source: src}
	if g.addressType == 1 {
		a.AddressMode = store.AddressManual
		for _, addr := range strings.Split(g.addresses, ",") {
			if addr = strings.TrimSpace(addr); addr != "" {
				// XXL-JOB writes base URLs with a trailing slash; Sundial's are http://host:port.
				a.Addresses = append(a.Addresses, strings.TrimRight(addr, "/"))
			}
		}
	}
	switch {
	case g.token == "default_token":
		m.unmapped(src+": access token", "it is XXL-JOB's public default, which is scanned for on the Internet: "+
			"give the app a credential of its own and set it in the executors (xxl.job.executor.accessToken)")
	case g.token != "":
		m.unmapped(src+": access token", "tokens are not copied (Sundial keeps it sealed with its server's key): "+
			"set the app's XXL-JOB token in Sundial, and the same in the executors (xxl.job.executor.accessToken)")
	}
	m.p.Apps = append(m.p.Apps, a)
}

func (m *mapper) job(x job, history []glue) {
	src := fmt.Sprintf("xxl_job_info %d %q", x.id, x.desc)
	app, ok := m.jobGroup[x.id]
	if !ok {
		m.unmapped(src, "its executor group %d does not exist", x.group)
		return
	}
	desc := x.desc
	if x.author != "" {
		desc += " (author " + x.author + ")"
	}
	j := &importer.Job{Job: sundial.Job{Group: app, Name: JobName(x.id), Description: desc, App: app,
		MaxRetries: max(x.retries, 0), Timeout: time.Duration(max(x.timeout, 0)) * time.Second}, Source: src}

	routing, ok := routings[x.route]
	if !ok {
		routing = "first"
		m.unmapped(src+": routing "+strconv.Quote(x.route), "no such XXL-JOB routing strategy; imported with first")
	}
	j.Routing = routing
	conc, ok := blocks[x.block]
	if !ok {
		conc = sundial.Serial
		if x.block != "" {
			m.unmapped(src+": block strategy "+strconv.Quote(x.block), "no such XXL-JOB block strategy; imported as serial (its default)")
		}
	}
	j.Concurrency = conc

	if x.glueType == "BEAN" || x.glueType == "" {
		j.Handler, j.Params = strings.TrimSpace(x.handler), x.param
		if j.Handler == "" {
			m.unmapped(src, "a BEAN job without a JobHandler cannot run")
			return
		}
	} else {
		h, ok := GlueHandlers[x.glueType]
		if !ok {
			m.unmapped(src, "GLUE type %s is not one XXL-JOB executors run", x.glueType)
			return
		}
		j.Handler, j.Params = h, x.glueSource
		j.Scripts = scripts(x, history)
		if x.param != "" {
			m.unmapped(src+": parameter "+strconv.Quote(x.param), "a Sundial script job carries its script in its params and has "+
				"no second parameter: pass it in the script")
		}
	}

	for _, addr := range strings.Split(x.alarmEmail, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		if _, err := alarm.ParseTarget(addr); err != nil {
			m.unmapped(src+": alarm e-mail "+strconv.Quote(addr), "%v", err)
			continue
		}
		j.AlarmTargets = append(j.AlarmTargets, addr)
	}
	for _, c := range strings.Split(x.child, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		id, err := strconv.ParseInt(c, 10, 64)
		childApp, known := m.jobGroup[id]
		switch {
		case err != nil:
			m.unmapped(src+": child job "+strconv.Quote(c), "not a job id")
		case id == x.id:
			m.unmapped(src+": child job "+c, "a job cannot be its own child (XXL-JOB skips it too)")
		case !known:
			m.unmapped(src+": child job "+c, "no such job is imported")
		default:
			j.Children = append(j.Children, importer.Key{Group: childApp, Name: JobName(id)})
		}
	}
	if t := m.trigger(x, src); t != nil {
		j.Triggers = []*importer.Trigger{t}
	}
	m.p.Jobs = append(m.p.Jobs, j)
}

// scripts is a GLUE job's script history, oldest first, ending with its current source.
func scripts(x job, history []glue) []importer.Script {
	var out []importer.Script
	for _, g := range history {
		out = append(out, importer.Script{Source: g.source, Note: g.remark})
	}
	if len(out) == 0 || out[len(out)-1].Source != x.glueSource {
		note := x.glueRemark
		if note == "" {
			note = "imported from XXL-JOB"
		}
		out = append(out, importer.Script{Source: x.glueSource, Note: note})
	}
	return out
}

// trigger maps the job's schedule; nil for a job that only runs when asked (NONE) or one
// whose schedule cannot be mapped (listed).
func (m *mapper) trigger(x job, src string) *importer.Trigger {
	t := &importer.Trigger{Paused: x.status == 0}
	fireNow := x.misfire == "FIRE_ONCE_NOW"
	if x.scheduleType != "NONE" && x.scheduleType != "" && !fireNow && x.misfire != "DO_NOTHING" {
		m.unmapped(src+": misfire strategy "+strconv.Quote(x.misfire), "no such XXL-JOB misfire strategy; imported as DO_NOTHING (its default)")
	}
	switch x.scheduleType {
	case "NONE", "":
		return nil
	case "CRON":
		c, err := sundial.Cron(x.scheduleConf, m.opt.Zone)
		if err != nil {
			m.unmapped(src+": cron "+strconv.Quote(x.scheduleConf), "%v; the job is imported without a trigger", err)
			return nil
		}
		for _, w := range c.Warnings() {
			m.p.Notes = append(m.p.Notes, fmt.Sprintf("%s: cron %q: %s", src, x.scheduleConf, w))
		}
		t.Schedule, t.TimeZone, t.Misfire = c, m.opt.Zone, schedule.MisfireDoNothing
		if fireNow {
			t.Misfire = schedule.MisfireFireNow
		}
	case "FIX_RATE":
		secs, err := strconv.Atoi(strings.TrimSpace(x.scheduleConf))
		if err != nil || secs < 1 {
			m.unmapped(src+": FIX_RATE "+strconv.Quote(x.scheduleConf), "want whole seconds, at least 1; the job is imported without a trigger")
			return nil
		}
		every := time.Duration(secs) * time.Second
		t.Schedule = schedule.Simple{Interval: every, RepeatCount: schedule.RepeatForever}
		// Skipping missed fires and waiting for the next slot is DO_NOTHING for a simple
		// trigger; FIRE_ONCE_NOW fires now and counts the rate from then, as XXL-JOB does.
		t.Misfire = schedule.MisfireRescheduleNextRemaining
		if fireNow {
			t.Misfire = schedule.MisfireFireNow
		}
		// Keep the running job's phase: its next planned fire, or the first slot after now.
		if x.status == 1 && x.nextTime > 0 {
			next := time.UnixMilli(x.nextTime)
			if behind := m.opt.Now.Sub(next); behind > 0 {
				next = next.Add((behind + every - 1) / every * every)
			}
			t.Start = next
		}
	default:
		m.unmapped(src+": schedule type "+x.scheduleType, "XXL-JOB declares it but never implemented it; the job is imported without a trigger")
		return nil
	}
	return t
}
