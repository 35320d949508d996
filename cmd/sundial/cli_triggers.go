package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial/api"
)

const triggerHeader = "ID JOB NAME SCHEDULE STATE NEXT FIRED"

func triggerRow(t api.Trigger) []string {
	return []string{itoa(t.ID), itoa(t.JobID), t.Name, scheduleSummary(t), t.State, when(t.NextFireAt), itoa(t.TimesFired)}
}

// scheduleSummary is a one-line summary of the trigger's schedule, or its kind when the
// server showed none (a trigger whose stored schedule no longer decodes).
func scheduleSummary(t api.Trigger) string {
	if s := t.Summary(); s != "" {
		return s
	}
	return t.Kind
}

const scheduleHelp = `

Schedules (give one):
  --cron EXPR [--tz ZONE]              a Quartz cron expression (seconds first, Sunday = 1)
  --every DURATION [--repeat N]        every DURATION, N more times after the first (default forever)
  --once                               one time, at --start (default now)
  --calendar-interval "N UNIT"         every N SECOND|MINUTE|HOUR|DAY|WEEK|MONTH|YEAR of the zone's
      [--preserve-hour] [--skip-day]   calendar
  --daily FROM-TO --every DURATION     every DURATION inside a daily window, e.g. 09:00-17:00
      [--days MON-FRI] [--repeat N]
Trigger options: --tz, --start/--end (RFC 3339), --calendar NAME (a stored exclusion calendar),
--priority, --misfire POLICY, --jitter DURATION (spread each fire's start up to DURATION after its
time), --dst quartz|once|once_skip_gap (local times a DST change repeats or skips),
--catchup-window DURATION, --catchup coalesce, --remaining-runs N, --trigger-name, --trigger-group,
--zone ZONE (repeated) or --zones Z1,Z2: fire at the schedule's times in each zone.`

// triggerFlags are a trigger's schedule and options, for `job create` and `trigger add`.
type triggerFlags struct {
	cron, tz, calInterval, daily, days string
	every                              time.Duration
	repeat, priority                   int
	once, preserveHour, skipDay        bool
	start, end, calendar, misfire      string
	catchUpWindow, catchUp             string
	name, group                        string
	jitter                             time.Duration
	dst                                string
	zone, zones                        []string
	// The trigger's own description, params and data: `trigger add` only (on `job create`
	// those flags are the job's).
	description, params, data string
	remainingRuns             int64
}

func (t *triggerFlags) add(f *pflag.FlagSet, prefixed bool) {
	f.StringVar(&t.cron, "cron", "", "Quartz cron expression")
	f.StringVar(&t.tz, "tz", "", "time zone of the schedule: IANA name or +05:30 (default UTC)")
	f.DurationVar(&t.every, "every", 0, "interval of a simple or daily trigger (e.g. 90s, 15m)")
	f.IntVar(&t.repeat, "repeat", -1, "simple/daily trigger: fires after the first (-1: forever)")
	f.BoolVar(&t.once, "once", false, "fire one time, at --start (default now)")
	f.StringVar(&t.calInterval, "calendar-interval", "", `calendar interval "N UNIT", e.g. "1 MONTH"`)
	f.BoolVar(&t.preserveHour, "preserve-hour", false, "calendar interval: keep the hour of day across DST changes")
	f.BoolVar(&t.skipDay, "skip-day", false, "calendar interval: skip a day whose hour does not exist")
	f.StringVar(&t.daily, "daily", "", "daily window FROM-TO, e.g. 09:00-17:00 (with --every)")
	f.StringVar(&t.days, "days", "", "daily window days, e.g. MON-FRI (default every day)")
	f.StringVar(&t.start, "start", "", "trigger start, RFC 3339 (default now)")
	f.StringVar(&t.end, "end", "", "trigger end, RFC 3339 (default none)")
	f.StringVar(&t.calendar, "calendar", "", "name of a stored exclusion calendar")
	f.IntVar(&t.priority, "priority", 0, "fires first among fires due at the same time when higher")
	f.StringVar(&t.misfire, "misfire", "", "misfire policy: smart, ignore, fire_now, do_nothing, reschedule_…")
	f.DurationVar(&t.jitter, "jitter", 0, "start each fire up to this long after its time, by an offset fixed per fire (e.g. 5m)")
	f.StringVar(&t.dst, "dst", "", "DST policy: quartz (default), once, once_skip_gap")
	f.StringArrayVar(&t.zone, "zone", nil, "fire in this IANA zone too; repeat for several (the first is the trigger's time zone)")
	f.StringSliceVar(&t.zones, "zones", nil, "the zones to fire in, comma-separated (as --zone repeated)")
	f.StringVar(&t.catchUpWindow, "catchup-window", "", "how late a fire may be before the misfire policy applies, e.g. 2h (default the cluster's threshold)")
	f.StringVar(&t.catchUp, "catchup", "", "coalesce: fires missed past the catch-up window become one run covering the gap")
	f.Int64Var(&t.remainingRuns, "remaining-runs", 0, "fire this many more times, then complete (0: no limit)")
	// On `job create`, --group is the job's group; the trigger's own name and group get a prefix.
	name, grp := "name", "group"
	if prefixed {
		name, grp = "trigger-name", "trigger-group"
	}
	f.StringVar(&t.name, name, "", "trigger name (default JOB#N)")
	f.StringVar(&t.group, grp, "", "trigger group (default the job's group)")
	if !prefixed {
		f.StringVar(&t.description, "description", "", "what the trigger is for")
		f.StringVar(&t.params, "params", "", "params given to this trigger's fires in place of the job's (not for script jobs)")
		f.StringVar(&t.data, "data", "", `data merged over the job's for this trigger's fires, a JSON object, e.g. '{"region":"eu"}'`)
	}
}

// given reports whether any schedule flag is set.
func (t *triggerFlags) given(f *pflag.FlagSet) bool {
	for _, n := range []string{"cron", "every", "once", "calendar-interval", "daily"} {
		if f.Changed(n) {
			return true
		}
	}
	return false
}

// request builds the trigger's request. Only the shape is checked here; the server checks
// the schedule itself (a bad cron comes back as a 400 naming the field).
func (t *triggerFlags) request(f *pflag.FlagSet) (api.TriggerRequest, error) {
	var forms []string
	for _, n := range []string{"cron", "once", "calendar-interval", "daily"} {
		if f.Changed(n) {
			forms = append(forms, "--"+n)
		}
	}
	if f.Changed("every") && !f.Changed("daily") {
		forms = append(forms, "--every")
	}
	req := api.TriggerRequest{Group: t.group, Name: t.name, Start: t.start, End: t.end, Calendar: t.calendar,
		Priority: t.priority, Misfire: t.misfire, Description: t.description, Params: t.params, DST: t.dst,
		CatchUpWindow: t.catchUpWindow, CatchUp: t.catchUp, RemainingRuns: t.remainingRuns}
	if t.jitter < 0 || t.jitter%time.Millisecond != 0 {
		return req, usageErrorf("--jitter %s: want a whole number of milliseconds, 0 or more", t.jitter)
	}
	req.JitterMs = t.jitter.Milliseconds()
	if t.data != "" {
		if err := json.Unmarshal([]byte(t.data), &req.Data); err != nil || req.Data == nil {
			return req, usageErrorf("--data %q: want a JSON object", t.data)
		}
	}
	if len(forms) != 1 {
		return req, usageErrorf("give exactly one schedule: --cron, --every, --once, --calendar-interval or --daily (got %s)",
			strings.Join(forms, ", "))
	}
	req.TimeZone = t.tz
	req.Zones = append(slices.Clone(t.zone), t.zones...)
	var repeat *int
	if f.Changed("repeat") {
		repeat = &t.repeat
	}
	switch forms[0] {
	case "--cron":
		req.Cron = &t.cron
	case "--once":
		req.Once = true
	case "--every":
		if t.every <= 0 || t.every%time.Millisecond != 0 {
			return req, usageErrorf("--every %s: want a positive whole number of milliseconds", t.every)
		}
		ms := t.every.Milliseconds()
		req.EveryMs, req.Repeat = &ms, repeat
	case "--calendar-interval":
		n, unit, ok := strings.Cut(strings.TrimSpace(t.calInterval), " ")
		interval, err := strconv.Atoi(n)
		if !ok || err != nil {
			return req, usageErrorf(`--calendar-interval %q: want "N UNIT", e.g. "1 MONTH"`, t.calInterval)
		}
		req.CalendarInterval = &api.CalendarInterval{Interval: interval, Unit: strings.ToUpper(strings.TrimSpace(unit)),
			PreserveHour: t.preserveHour, SkipDay: t.skipDay}
	case "--daily":
		from, to, ok := strings.Cut(t.daily, "-")
		if !ok {
			return req, usageErrorf("--daily %q: want FROM-TO, e.g. 09:00-17:00", t.daily)
		}
		interval, unit, err := dailyInterval(t.every)
		if err != nil {
			return req, err
		}
		req.DailyInterval = &api.DailyInterval{From: from, To: to, Interval: interval, Unit: strings.ToUpper(unit.String()),
			Days: t.days, Repeat: repeat}
	}
	return req, nil
}

func newTriggerCmd() *cobra.Command {
	o := &apiOptions{}
	return group("trigger", "Add, inspect and control a job's triggers", o,
		newTriggerListCmd(o), newTriggerGetCmd(o), newTriggerNextCmd(o), newTriggerAddCmd(o), newTriggerUpdateCmd(o), newTriggerDeleteCmd(o),
		newTriggerActionCmd(o, "pause", "Pause a trigger", "Paused"),
		newTriggerActionCmd(o, "resume", "Resume a paused trigger", "Resumed"))
}

func newTriggerListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	var job string
	cmd := &cobra.Command{Use: "list JOB", Short: "List a job's triggers (JOB: its id, NAME or GROUP/NAME)", Args: cobra.MaximumNArgs(1)}
	p.addFlags(cmd)
	cmd.Flags().StringVar(&job, "job", "", "the job, as the argument JOB gives it")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobArg(ctx, c, args, job)
		if err != nil {
			return err
		}
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Trigger], error) {
			return c.ListTriggers(ctx, id, lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, triggerHeader, triggerRow)
	})
	return cmd
}

func newTriggerGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get ID", Short: "Show a trigger", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("trigger", args[0])
		if err != nil {
			return err
		}
		t, err := c.GetTrigger(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, t, showTrigger)
	})
	return cmd
}

func showTrigger(w io.Writer, t api.Trigger) error {
	kv := []string{"ID", itoa(t.ID), "Job", itoa(t.JobID), "Group", t.Group, "Name", t.Name,
		"Schedule", scheduleSummary(t), "Time zone", t.TimeZone, "Calendar", t.Calendar, "Priority", strconv.Itoa(t.Priority),
		"Misfire", t.Misfire, "Jitter", (time.Duration(t.JitterMs) * time.Millisecond).String(), "DST", t.DST, "State", t.State, "Error", t.ErrorMessage, "Start", when(t.Start), "End", when(t.End),
		"Next fire", when(t.NextFireAt), "Previous fire", when(t.PrevFireAt), "Times fired", itoa(t.TimesFired)}
	if t.RemainingRuns != nil {
		kv = append(kv, "Remaining runs", itoa(*t.RemainingRuns))
	}
	if len(t.Zones) > 0 {
		kv = append(kv, "Zones", strings.Join(t.Zones, ", "))
	}
	// A trigger's own description, params, data and catch-up policy are shown only when it
	// has them.
	if t.CatchUpWindow != "" {
		kv = append(kv, "Catch-up window", t.CatchUpWindow)
	}
	if t.CatchUp != "" {
		kv = append(kv, "Catch-up", t.CatchUp)
	}
	if t.Description != "" {
		kv = append(kv, "Description", t.Description)
	}
	if t.Params != "" {
		kv = append(kv, "Params", t.Params)
	}
	if len(t.Data) > 0 {
		b, err := json.Marshal(t.Data)
		if err != nil {
			return err
		}
		kv = append(kv, "Data", string(b))
	}
	return fields(w, kv...)
}

func newTriggerAddCmd(o *apiOptions) *cobra.Command {
	var tf triggerFlags
	var job string
	cmd := &cobra.Command{
		Use:     "add JOB [schedule flags]",
		Short:   "Add a trigger to a job (JOB: its id, NAME or GROUP/NAME)",
		Long:    "Add a trigger to a job." + scheduleHelp,
		Example: `  sundial trigger add nightly-export --daily 09:00-17:00 --every 15m --days MON-FRI --tz Europe/Berlin`,
		Args:    cobra.MaximumNArgs(1),
	}
	tf.add(cmd.Flags(), false)
	cmd.Flags().StringVar(&job, "job", "", "the job, as the argument JOB gives it")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobArg(ctx, c, args, job)
		if err != nil {
			return err
		}
		req, err := tf.request(cmd.Flags())
		if err != nil {
			return err
		}
		t, err := c.AddTrigger(ctx, id, req)
		if err != nil {
			return err
		}
		for _, w := range t.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", termSafe(w))
		}
		return printOne(cmd.OutOrStdout(), o, t, showTrigger)
	})
	return cmd
}

func newTriggerDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete ID", Short: "Delete a trigger", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("trigger", args[0])
		if err != nil {
			return err
		}
		if err := c.DeleteTrigger(ctx, id); err != nil {
			return err
		}
		if !o.machine() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted trigger %d\n", id)
		}
		return nil
	})
	return cmd
}

func newTriggerActionCmd(o *apiOptions, action, short, done string) *cobra.Command {
	cmd := &cobra.Command{Use: action + " ID", Short: short, Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("trigger", args[0])
		if err != nil {
			return err
		}
		act := c.PauseTrigger
		if action == "resume" {
			act = c.ResumeTrigger
		}
		t, err := act(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, t, func(w io.Writer, t api.Trigger) error {
			_, err := fmt.Fprintf(w, "%s trigger %d (%s)\n", done, id, t.State)
			return err
		})
	})
	return cmd
}

// newTriggerUpdateCmd changes a stored trigger's policies; only the flags given change.
func newTriggerUpdateCmd(o *apiOptions) *cobra.Command {
	var misfire, window, catchUp, dst string
	var jitter time.Duration
	var priority int
	cmd := &cobra.Command{Use: "update ID", Short: "Change a trigger's catch-up, jitter, DST, misfire policy or priority",
		Example: `  sundial trigger update 7 --catchup-window 4h --catchup coalesce --jitter 5m --dst once`, Args: cobra.ExactArgs(1)}
	f := cmd.Flags()
	f.StringVar(&misfire, "misfire", "", "misfire policy: smart, ignore, fire_now, do_nothing, reschedule_…")
	f.StringVar(&window, "catchup-window", "", `how late a fire may be before the misfire policy applies, e.g. 2h ("" : the cluster's threshold)`)
	f.StringVar(&catchUp, "catchup", "", `coalesce, or "" for the misfire policy alone`)
	f.DurationVar(&jitter, "jitter", 0, "start each fire up to this long after its time (0: none)")
	f.StringVar(&dst, "dst", "", "DST policy: quartz, once, once_skip_gap")
	f.IntVar(&priority, "priority", 0, "fires first among fires due at the same time when higher")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("trigger", args[0])
		if err != nil {
			return err
		}
		var p api.TriggerPolicy
		set := func(name string, v *string) *string {
			if f.Changed(name) {
				return v
			}
			return nil
		}
		p.Misfire, p.CatchUpWindow, p.CatchUp, p.DST = set("misfire", &misfire), set("catchup-window", &window), set("catchup", &catchUp), set("dst", &dst)
		if f.Changed("jitter") {
			if jitter < 0 || jitter%time.Millisecond != 0 {
				return usageErrorf("--jitter %s: want a whole number of milliseconds, 0 or more", jitter)
			}
			ms := jitter.Milliseconds()
			p.JitterMs = &ms
		}
		if f.Changed("priority") {
			p.Priority = &priority
		}
		if p == (api.TriggerPolicy{}) {
			return usageErrorf("give at least one of --misfire, --catchup-window, --catchup, --jitter, --dst, --priority")
		}
		t, err := c.UpdateTrigger(ctx, id, p)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, t, showTrigger)
	})
	return cmd
}

func newTriggerNextCmd(o *apiOptions) *cobra.Command {
	var n int
	var afterFlag string
	cmd := &cobra.Command{
		Use:   "next ID [-n N] [--after TIME]",
		Short: "Show a stored trigger's next fire times",
		Long: `Show a stored trigger's next fire times as the scheduler will fire them: its calendar
skipped and, when its pending fire is already later than the misfire threshold, its misfire
policy applied (said on standard error), in the trigger's time zone. A paused trigger shows
the times it would have if resumed now.

With --after, show instead the times its schedule and calendar give strictly after that
instant (RFC 3339), from its start to its end, whatever its state: what Quartz's
getFireTimeAfter lists for the same trigger, to check an imported store against Quartz.`,
		Example: `  sundial trigger next 7 -n 10
  sundial trigger next 7 --after 2027-01-04T00:00:00+01:00 -n 5`,
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().IntVarP(&n, "count", "n", 10, "how many fire times (1..1000)")
	cmd.Flags().StringVar(&afterFlag, "after", "", "list the times strictly after this instant (RFC 3339) instead of from now")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := parseID("trigger", args[0])
		if err != nil {
			return err
		}
		if n < 1 || n > 1000 {
			return usageErrorf("--count %d: want 1..1000", n)
		}
		var after time.Time
		if afterFlag != "" {
			if after, err = time.Parse(time.RFC3339Nano, afterFlag); err != nil {
				return usageErrorf("--after %q: want an RFC 3339 time, e.g. 2027-01-04T00:00:00Z", afterFlag)
			}
		}
		next, err := c.TriggerNextAfter(ctx, id, after, n)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, next, func(w io.Writer, next api.TriggerNext) error {
			if next.Misfired {
				fmt.Fprintf(cmd.ErrOrStderr(), "trigger %d misfired: its pending fire is late, these times follow its misfire policy\n", id)
			}
			if next.State == "paused" {
				fmt.Fprintf(cmd.ErrOrStderr(), "trigger %d is paused: these are its times if resumed now\n", id)
			}
			for i, f := range next.Fires {
				day := ""
				if t, err := time.Parse(time.RFC3339Nano, f); err == nil {
					day = t.Format("Mon")
				}
				line := f + "  " + day
				if i < len(next.Due) {
					line += "  starts " + next.Due[i]
				}
				if i < len(next.DST) && next.DST[i] != "" {
					line += "  DST " + next.DST[i]
				}
				if i < len(next.Zones) {
					line += "  " + next.Zones[i]
				}
				fmt.Fprintln(w, line)
			}
			return nil
		})
	})
	return cmd
}
