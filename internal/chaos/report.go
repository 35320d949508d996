package chaos

import (
	"fmt"
	"strings"
	"time"
)

// String is the report as the suite prints it.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos report (%s): %d fires scheduled, %d handler runs in the ledger\n", r.Dialect, r.Fires, r.Runs)
	for _, c := range classOrder {
		fmt.Fprintf(&b, "  %-9s %7d", c, r.Counts[c])
		switch c {
		case NotRun:
			if len(r.NotRunStates) > 0 {
				fmt.Fprintf(&b, "   their database rows by state: %v", r.NotRunStates)
			}
		case Stuck:
			fmt.Fprintf(&b, "   (%d live rows after the settle)", r.StuckRows)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "  unexpected runs %d, overlapping runs of serial jobs %d, runs the database forgot %d\n",
		r.Unexpected, r.SerialOverlaps, r.Forgotten)
	fmt.Fprintf(&b, "  lateness of the first run: p50 %v, p99 %v, max %v\n", r.LateP50, r.LateP99, r.LateMax)
	if r.Workflows != nil {
		b.WriteString(r.Workflows.String())
	}
	if len(r.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, f := range r.Faults {
			fmt.Fprintf(&b, "  +%6.1fs %s\n", float64(f.At-r.Start)/1000, f.What)
			if f.Err != "" {
				fmt.Fprintf(&b, "           DID NOT TAKE EFFECT: %s\n", f.Err)
			}
		}
	}
	if len(r.Kills) > 0 {
		b.WriteString("node kills and long freezes, and when the work each held was released:\n")
		for _, k := range r.Kills {
			rel := "never (still held at the end)"
			if k.Held == 0 {
				rel = "held nothing"
			} else if k.Released != 0 {
				rel = (time.Duration(k.Released-k.At) * time.Millisecond).Round(100 * time.Millisecond).String()
			}
			restart := k.Restart
			if restart == "" {
				restart = "not restarted"
			}
			if k.Restarted != 0 {
				restart += fmt.Sprintf(", up again after %.1fs", float64(k.Restarted-k.At)/1000)
			}
			fmt.Fprintf(&b, "  +%6.1fs %s (%s): %d live executions, released after %s\n",
				float64(k.At-r.Start)/1000, k.Proc, restart, k.Held, rel)
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("examples:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "  %-8s %s @%s: %s\n", f.Class, f.Job, time.UnixMilli(f.Sched).UTC().Format("15:04:05.000"), f.Detail)
		}
	}
	if failed := r.Failed(); len(failed) > 0 {
		fmt.Fprintf(&b, "FAIL: %s\n", strings.Join(failed, ", "))
	} else {
		b.WriteString("PASS: 0 double, 0 zombie, 0 missing, 0 stuck\n")
	}
	return b.String()
}
