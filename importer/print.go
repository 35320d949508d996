package importer

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/schedule"
)

// Print writes the plan as Run left it, one line per item, then what was not imported and
// a summary. applied says whether Run committed.
func (p *Plan) Print(w io.Writer, applied bool) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "Import from %s\n", p.Source)
	for _, n := range p.Notes {
		fmt.Fprintf(b, "Note: %s\n", n)
	}
	if len(p.Apps) > 0 {
		fmt.Fprintln(b, "\nApps:")
		for _, a := range p.Apps {
			fmt.Fprintf(b, "  %-9s app %s%s\n", a.Action, a.Name, outcome(a.Outcome, appDetail(a)))
		}
	}
	if len(p.Calendars) > 0 {
		fmt.Fprintln(b, "\nCalendars:")
		for _, c := range p.Calendars {
			detail := c.Spec
			if c.Base != "" {
				detail += ", base " + c.Base
			}
			if c.Zone != "" {
				detail += ", zone " + c.Zone
			}
			fmt.Fprintf(b, "  %-9s calendar %s%s\n", c.Action, c.Name, outcome(c.Outcome, detail))
		}
	}
	if len(p.PausedGroups) > 0 {
		fmt.Fprintf(b, "\nPaused trigger groups: %s (newly paused: %s)\n", strings.Join(p.PausedGroups, ", "), orNone(p.GroupsPaused))
	}
	if len(p.Jobs) > 0 {
		fmt.Fprintln(b, "\nJobs:")
		for _, j := range p.Jobs {
			fmt.Fprintf(b, "  %-9s job %s%s\n", j.Action, j.Key(), outcome(j.Outcome, jobDetail(j)))
			if j.Action == Refused {
				continue
			}
			for _, t := range j.Triggers {
				fmt.Fprintf(b, "    %-9s trigger %s/%s%s\n", t.Action, t.Group, t.Name, outcome(t.Outcome, triggerDetail(t)))
			}
		}
	}
	if len(p.Unmapped) > 0 {
		fmt.Fprintln(b, "\nNot imported:")
		for _, u := range p.Unmapped {
			fmt.Fprintf(b, "  %s: %s\n", u.Item, u.Reason)
		}
	}
	fmt.Fprintf(b, "\n%s\n", p.summaryLine())
	if applied {
		fmt.Fprintln(b, "Applied.")
	} else {
		fmt.Fprintln(b, "Dry run: nothing was written. Run again with --apply to import.")
	}
	return b.Flush()
}

// outcome is an item's line after its name: the detail for what is created, the changes of
// an update, the reason of a refusal.
func outcome(o Outcome, detail string) string {
	switch o.Action {
	case Update:
		return ": " + detail + " (changes " + strings.Join(o.Changes, ", ") + ")"
	case Refused:
		return ": " + o.Reason
	case Unchanged:
		return ""
	}
	return ": " + detail
}

func appDetail(a *App) string {
	var parts []string
	if a.Title != "" {
		parts = append(parts, fmt.Sprintf("%q", a.Title))
	}
	mode := string(a.AddressMode)
	if mode == "" {
		mode = "auto"
	}
	if len(a.Addresses) > 0 {
		mode += " " + strings.Join(a.Addresses, ",")
	}
	parts = append(parts, mode)
	if a.Protocol != "" {
		proto := "protocol " + a.Protocol
		if a.Generation != "" {
			proto += " " + a.Generation
		}
		parts = append(parts, proto)
	}
	return strings.Join(parts, ", ")
}

func jobDetail(j *Job) string {
	var parts []string
	if j.Description != "" {
		parts = append(parts, fmt.Sprintf("%q", j.Description))
	}
	if j.App != "" {
		routing := j.Routing
		if routing == "" {
			routing = "first"
		}
		parts = append(parts, fmt.Sprintf("app %s handler %s routing %s", j.App, j.Handler, routing))
	} else {
		parts = append(parts, "handler "+j.Handler)
	}
	if j.Concurrency != "" {
		parts = append(parts, string(j.Concurrency))
	}
	if j.MaxRetries > 0 {
		parts = append(parts, fmt.Sprintf("retries %d", j.MaxRetries))
	}
	if j.Timeout > 0 {
		parts = append(parts, "timeout "+j.Timeout.String())
	}
	if len(j.AlarmTargets) > 0 {
		parts = append(parts, "alarm "+strings.Join(j.AlarmTargets, ","))
	}
	if len(j.Children) > 0 {
		cs := make([]string, len(j.Children))
		for i, c := range j.Children {
			cs[i] = c.String()
		}
		parts = append(parts, "children "+strings.Join(cs, ","))
	}
	if n := len(j.Scripts); n > 0 {
		parts = append(parts, fmt.Sprintf("script with %d version%s", n, map[bool]string{true: "s"}[n > 1]))
	} else if j.Params != "" {
		parts = append(parts, fmt.Sprintf("params %q", j.Params))
	}
	if len(j.Triggers) == 0 {
		parts = append(parts, "no trigger")
	}
	return strings.Join(parts, ", ")
}

func triggerDetail(t *Trigger) string {
	var parts []string
	switch s := t.Schedule.(type) {
	case *schedule.Cron:
		parts = append(parts, fmt.Sprintf("cron %q %s", s.String(), t.TimeZone))
	case schedule.Simple:
		every := "every " + s.Interval.String()
		if s.RepeatCount >= 0 {
			every += fmt.Sprintf(", %d repeats", s.RepeatCount)
		}
		parts = append(parts, every)
	case nil:
	default:
		parts = append(parts, string(s.Kind())+" "+schedule.EncodeSpec(s))
	}
	if t.Calendar != "" {
		parts = append(parts, "calendar "+t.Calendar)
	}
	if t.Priority != 0 && t.Priority != 5 {
		parts = append(parts, fmt.Sprintf("priority %d", t.Priority))
	}
	parts = append(parts, "misfire "+t.Misfire.String())
	if t.Paused {
		parts = append(parts, "paused")
	}
	if !t.Next.IsZero() {
		loc := time.UTC
		if z, err := schedule.LoadZone(t.TimeZone); err == nil && t.TimeZone != "" {
			loc = z
		}
		parts = append(parts, "next "+t.Next.In(loc).Format("2006-01-02 15:04:05 MST"))
	}
	if t.Description != "" {
		parts = append(parts, fmt.Sprintf("description %q", t.Description))
	}
	if len(t.Data) > 0 {
		parts = append(parts, "data "+jsonOf(t.Data))
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// summaryLine counts the plan's items by action.
func (p *Plan) summaryLine() string {
	count := func(name string, actions []Action) string {
		n := map[Action]int{}
		for _, a := range actions {
			n[a]++
		}
		var parts []string
		for _, a := range []Action{Create, Update, Unchanged, Refused} {
			if n[a] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[a], a))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return fmt.Sprintf("%s: %s", name, strings.Join(parts, ", "))
	}
	var apps, cals, jobs, trigs []Action
	for _, a := range p.Apps {
		apps = append(apps, a.Action)
	}
	for _, c := range p.Calendars {
		cals = append(cals, c.Action)
	}
	for _, j := range p.Jobs {
		jobs = append(jobs, j.Action)
		if j.Action == Refused {
			continue
		}
		for _, t := range j.Triggers {
			trigs = append(trigs, t.Action)
		}
	}
	var parts []string
	for _, s := range []string{count("apps", apps), count("calendars", cals), count("jobs", jobs), count("triggers", trigs)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	parts = append(parts, fmt.Sprintf("not imported: %d", len(p.Unmapped)))
	return "Summary: " + strings.Join(parts, "; ")
}

// Changed reports whether Run created, updated or paused anything.
func (p *Plan) Changed() bool {
	for _, a := range p.Apps {
		if a.Action == Create || a.Action == Update {
			return true
		}
	}
	for _, c := range p.Calendars {
		if c.Action == Create || c.Action == Update {
			return true
		}
	}
	for _, j := range p.Jobs {
		if j.Action == Create || j.Action == Update {
			return true
		}
		for _, t := range j.Triggers {
			if t.Action == Create || t.Action == Update {
				return true
			}
		}
	}
	return len(p.GroupsPaused) > 0
}
