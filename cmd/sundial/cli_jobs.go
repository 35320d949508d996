package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sundial-scheduler/sundial/api"
)

// jobFlags are the settings of a job, shared by create and update.
type jobFlags struct {
	group, description, handler, app, routing, params, data, concurrency string
	paramsFile                                                           string
	paramsSecret                                                         bool
	timeout, backoff, dispatchTimeout                                    time.Duration
	retries, maxConcurrent, pauseAfterFailures                           int
	recovery, persistData                                                bool
	alarms                                                               []string
	alarmThreshold                                                       int
	alarmWindow, alarmSilence                                            time.Duration
	alarmRecovery                                                        bool
}

func (j *jobFlags) add(f *pflag.FlagSet) {
	f.StringVar(&j.group, "group", "", "job group (default \"default\")")
	f.StringVar(&j.description, "description", "", "what the job is for")
	f.StringVar(&j.handler, "handler", "", "handler that runs the job (built in: noop)")
	f.StringVar(&j.app, "app", "", "run the job on this app's executors (remote); empty: in the server's process")
	f.StringVar(&j.routing, "routing", "", "how the app's executor is picked: first, last, round_robin, random, consistent_hash, "+
		"least_frequently_used, least_recently_used, failover, busy_over, sharding_broadcast")
	f.StringVar(&j.params, "params", "", "parameter string passed to the handler")
	f.StringVar(&j.paramsFile, "params-file", "", "read the params from this file (- for stdin): secret params stay out of ps and shell history")
	f.BoolVar(&j.paramsSecret, "params-secret", false, "store the params encrypted (the server needs --secret-key); shown as *** afterwards")
	f.StringVar(&j.data, "data", "", `job data as a JSON object, e.g. '{"region":"eu"}'`)
	f.StringVar(&j.concurrency, "concurrency", "", "overlap policy, when a fire finds the job running: allow, skip, buffer_one, "+
		"buffer_all, cancel, terminate or at_most (old names: serial, discard, replace)")
	f.IntVar(&j.pauseAfterFailures, "pause-after-failures", 0, "pause the job, with a note, after this many runs in a row failed for good (0: never)")
	f.IntVar(&j.maxConcurrent, "max-concurrent", 0, "with --concurrency at_most: how many runs at once, across the cluster (1 to 1000)")
	f.DurationVar(&j.timeout, "timeout", 0, "cancel a run after this long (e.g. 30s; 0: never)")
	f.IntVar(&j.retries, "retries", 0, "retries after a failed run")
	f.DurationVar(&j.backoff, "backoff", 0, "wait before the first retry, doubling after each (e.g. 10s)")
	f.DurationVar(&j.dispatchTimeout, "dispatch-timeout", 0, "remote jobs: how long a fire that finds no executor online waits for one (e.g. 2m; 0: the server's --executor-wait)")
	f.BoolVar(&j.recovery, "recovery", false, "run again after a node crashed during a run")
	f.BoolVar(&j.persistData, "persist-data", false, "keep changes a run makes to the job data")
	f.StringArrayVar(&j.alarms, "alarm", nil, "tell this target when a run fails for good (repeatable): an e-mail address "+
		"an http(s):// webhook URL, or slack:URL, teams:URL, dingtalk:URL[#secret=SEC...], lark:URL[#secret=...], wecom:URL, "+
		"pagerduty:ROUTING_KEY; on update the list replaces the job's (slack:*** keeps the stored one), and --alarm '' clears it")
	f.IntVar(&j.alarmThreshold, "alarm-threshold", 0, "alarm only after this many failures in a row (or within --alarm-window); 0 or 1: every one")
	f.DurationVar(&j.alarmWindow, "alarm-window", 0, "count --alarm-threshold failures within this long instead of in a row (e.g. 1h)")
	f.DurationVar(&j.alarmSilence, "alarm-silence", 0, "send no other alarm of the job this long after one (e.g. 30m)")
	f.BoolVar(&j.alarmRecovery, "alarm-recovery", false, "tell the alarm targets when the job succeeds again after an alarm")
}

// apply copies the flags that were given (all of them when every is set) onto req.
func (j *jobFlags) apply(f *pflag.FlagSet, req *api.JobRequest, every bool) error {
	set := func(name string) bool { return every || f.Changed(name) }
	if set("group") {
		req.Group = j.group
	}
	if set("description") {
		req.Description = j.description
	}
	if set("handler") {
		req.Handler = j.handler
	}
	if set("app") {
		req.App = j.app
	}
	if set("routing") {
		req.Routing = j.routing
	}
	if set("params") {
		req.Params = j.params
	}
	if f.Changed("params-file") {
		if f.Changed("params") {
			return usageErrorf("--params and --params-file: give one")
		}
		var b []byte
		var err error
		if j.paramsFile == "-" {
			b, err = io.ReadAll(os.Stdin)
		} else {
			b, err = os.ReadFile(j.paramsFile)
		}
		if err != nil {
			return usageErrorf("--params-file: %v", err)
		}
		req.Params = strings.TrimSuffix(string(b), "\n")
	}
	if set("params-secret") {
		req.ParamsSecret = j.paramsSecret
	}
	if set("data") && j.data != "" {
		var d map[string]any
		if err := json.Unmarshal([]byte(j.data), &d); err != nil {
			return usageErrorf("--data %q: want a JSON object: %v", j.data, err)
		}
		req.Data = d
	}
	if set("concurrency") {
		req.Concurrency = j.concurrency
		if !f.Changed("max-concurrent") && j.concurrency != "at_most" {
			req.MaxConcurrent = 0 // the limit goes with at_most
		}
	}
	if set("max-concurrent") {
		req.MaxConcurrent = j.maxConcurrent
	}
	if set("pause-after-failures") {
		req.PauseAfterFailures = j.pauseAfterFailures
	}
	if err := setMillis(set, msFlag{"timeout", j.timeout, &req.TimeoutMs}, msFlag{"backoff", j.backoff, &req.RetryBackoffMs},
		msFlag{"dispatch-timeout", j.dispatchTimeout, &req.DispatchTimeoutMs}); err != nil {
		return err
	}
	if set("retries") {
		req.MaxRetries = j.retries
	}
	if set("recovery") {
		req.RequestsRecovery = j.recovery
	}
	if set("persist-data") {
		req.PersistData = j.persistData
	}
	if err := j.applyAlarmPolicy(set, req); err != nil {
		return err
	}
	if set("alarm") {
		req.AlarmTargets = nil
		for _, a := range j.alarms {
			if a != "" {
				req.AlarmTargets = append(req.AlarmTargets, a)
			}
		}
	}
	return nil
}

// msFlag is a duration flag sent as milliseconds.
type msFlag struct {
	name string
	v    time.Duration
	dst  *int64
}

// setMillis writes the duration flags that were given into their fields, in milliseconds.
func setMillis(set func(string) bool, flags ...msFlag) error {
	for _, d := range flags {
		if !set(d.name) {
			continue
		}
		if d.v < 0 || d.v%time.Millisecond != 0 {
			return usageErrorf("--%s %s: want a non-negative whole number of milliseconds", d.name, d.v)
		}
		*d.dst = d.v.Milliseconds()
	}
	return nil
}

// applyAlarmPolicy copies the alarm policy's flags that were given onto req, keeping the
// rest of the policy req has.
func (j *jobFlags) applyAlarmPolicy(set func(string) bool, req *api.JobRequest) error {
	p := api.AlarmPolicy{}
	if req.AlarmPolicy != nil {
		p = *req.AlarmPolicy
	}
	if set("alarm-threshold") {
		p.Threshold = j.alarmThreshold
	}
	if err := setMillis(set, msFlag{"alarm-window", j.alarmWindow, &p.WindowMs}, msFlag{"alarm-silence", j.alarmSilence, &p.SilenceMs}); err != nil {
		return err
	}
	if set("alarm-recovery") {
		p.Recovery = j.alarmRecovery
	}
	if p != (api.AlarmPolicy{}) || req.AlarmPolicy != nil {
		req.AlarmPolicy = &p
	}
	return nil
}

func newJobCmd() *cobra.Command {
	o := &apiOptions{}
	cmd := group("job", "Create, inspect and control jobs", o,
		newJobCreateCmd(o), newJobListCmd(o), newJobGetCmd(o), newJobUpdateCmd(o), newJobDeleteCmd(o),
		newJobActionCmd(o, "pause", "Pause a job: its triggers stop firing", "Paused"),
		newJobActionCmd(o, "resume", "Resume a paused job", "Resumed"),
		newJobRunCmd(o))
	cmd.Long = "Create, inspect and control jobs. A job is given by its id, NAME (in group default) or GROUP/NAME;\n" +
		"GROUP/NAME is never read as an id (a job named \"123\" is default/123)."
	return cmd
}

func newJobCreateCmd(o *apiOptions) *cobra.Command {
	var jf jobFlags
	var tf triggerFlags
	cmd := &cobra.Command{
		Use:   "create NAME --handler H [schedule flags]",
		Short: "Create a job, with one trigger if a schedule is given",
		Long: `Create a job. With a schedule flag it also gets one trigger; add more with
'sundial trigger add'.` + scheduleHelp,
		Example: `  sundial job create hello --handler noop --cron "0 0 * * * ?" --tz Europe/Berlin
  sundial job create report --handler report --every 15m --retries 3 --backoff 10s
  sundial job create now --handler noop --once`,
		Args: cobra.ExactArgs(1),
	}
	jf.add(cmd.Flags())
	tf.add(cmd.Flags(), true)
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		req := api.JobRequest{Name: args[0]}
		if err := jf.apply(cmd.Flags(), &req, true); err != nil {
			return err
		}
		if tf.given(cmd.Flags()) {
			t, err := tf.request(cmd.Flags())
			if err != nil {
				return err
			}
			req.Triggers = []api.TriggerRequest{t}
		}
		j, err := c.CreateJob(ctx, req)
		if err != nil {
			return err
		}
		return printJob(cmd, o, j)
	})
	return cmd
}

// printJob prints a returned job, and its warnings on standard error.
func printJob(cmd *cobra.Command, o *apiOptions, j *api.Job) error {
	printWarnings(cmd, j.Warnings)
	return printOne(cmd.OutOrStdout(), o, j, showJob)
}

// printWarnings prints an answer's warnings on standard error, one a line.
func printWarnings(cmd *cobra.Command, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", termSafe(w))
	}
}

// paramsShown is the params line of a job: secret params come masked from the server.
func paramsShown(j api.Job) string {
	if j.ParamsSecret {
		return j.Params + " (secret)"
	}
	return j.Params
}

// pauseShown is the job's pause on failure with its count so far.
func pauseShown(j api.Job) string {
	if j.PauseAfterFailures == 0 {
		return ""
	}
	return fmt.Sprintf("%d (%d in a row now)", j.PauseAfterFailures, j.ConsecutiveFailures)
}

// concurrencyShown is the job's overlap policy with at_most's limit.
func concurrencyShown(j api.Job) string {
	if j.MaxConcurrent > 0 {
		return j.Concurrency + " " + strconv.Itoa(j.MaxConcurrent)
	}
	return j.Concurrency
}

func showJob(w io.Writer, j api.Job) error {
	data := ""
	if len(j.Data) > 0 {
		b, _ := json.Marshal(j.Data) // it came from JSON
		data = string(b)
	}
	err := fields(w, "ID", itoa(j.ID), "Group", j.Group, "Name", j.Name, "Description", j.Description,
		"Handler", j.Handler, "App", j.App, "Routing", j.Routing, "Params", paramsShown(j), "Data", data, "Concurrency", concurrencyShown(j), "Pause after failures", pauseShown(j),
		"Timeout", msDuration(j.TimeoutMs), "Retries", strconv.Itoa(j.MaxRetries), "Backoff", msDuration(j.RetryBackoffMs),
		"Dispatch timeout", dispatchTimeoutShown(j), "Recovery", yesNo(j.RequestsRecovery), "Persist data", yesNo(j.PersistData),
		"Alarms", strings.Join(j.AlarmTargets, ", "), "Alarm policy", alarmPolicyShown(j.AlarmPolicy), "State", jobState(j),
		"Created", when(j.CreatedAt), "Updated", when(j.UpdatedAt))
	if err != nil || len(j.Triggers) == 0 {
		return err
	}
	fmt.Fprintln(w)
	t := newTable(w, triggerHeader)
	for _, tr := range j.Triggers {
		t.row(triggerRow(tr)...)
	}
	return t.flush()
}

// alarmPolicyShown says a job's alarm policy in a few words.
func alarmPolicyShown(p api.AlarmPolicy) string {
	var parts []string
	switch {
	case p.Threshold > 1 && p.WindowMs > 0:
		parts = append(parts, fmt.Sprintf("after %d failures within %s", p.Threshold, msDuration(p.WindowMs)))
	case p.Threshold > 1:
		parts = append(parts, fmt.Sprintf("after %d failures in a row", p.Threshold))
	default:
		parts = append(parts, "every failure")
	}
	if p.SilenceMs > 0 {
		parts = append(parts, "silence "+msDuration(p.SilenceMs))
	}
	if p.Recovery {
		parts = append(parts, "recovery notice")
	}
	return strings.Join(parts, ", ")
}

func newJobListCmd(o *apiOptions) *cobra.Command {
	var p pageOptions
	var jf api.JobFilter
	cmd := &cobra.Command{Use: "list", Short: "List jobs", Args: cobra.NoArgs,
		Example: `  sundial job list --app billing --state failing
  sundial job list --group nightly --name-prefix report- --limit 20`}
	p.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&jf.Group, "group", "", "only jobs of this group")
	f.StringVar(&jf.App, "app", "", "only remote jobs of this app")
	f.StringVar(&jf.Handler, "handler", "", "only jobs running this handler")
	f.StringVar(&jf.NamePrefix, "name-prefix", "", "only jobs whose name starts with this (ignoring case)")
	f.StringVar(&jf.State, "state", "", "only jobs that are enabled, disabled, paused, failing (the newest ended run failed), or have a trigger waiting, complete or in error")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, _ []string) error {
		l, err := list(ctx, &p, func(ctx context.Context, lo api.ListOptions) (*api.Page[api.Job], error) {
			return c.ListJobs(ctx, jf, lo)
		})
		if err != nil {
			return err
		}
		return printList(cmd.OutOrStdout(), o, l, "ID GROUP NAME HANDLER APP CONCURRENCY STATE CREATED",
			func(j api.Job) []string {
				// A listed job carries no triggers: its state is the first word of jobState's.
				st, _, _ := strings.Cut(jobState(j), " ")
				return []string{itoa(j.ID), j.Group, j.Name, j.Handler, j.App, j.Concurrency, st, when(j.CreatedAt)}
			})
	})
	return cmd
}

func newJobGetCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "get ID|NAME|GROUP/NAME", Short: "Show a job and its triggers", Args: cobra.ExactArgs(1)}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		j, err := c.GetJob(ctx, id)
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, j, showJob)
	})
	return cmd
}

func newJobUpdateCmd(o *apiOptions) *cobra.Command {
	var jf jobFlags
	var name string
	cmd := &cobra.Command{
		Use:   "update ID|NAME|GROUP/NAME [flags]",
		Short: "Change a job's settings (only the flags given)",
		Long: `Change a job's settings: the flags given replace those settings, the others stay.
Its triggers are changed with 'sundial trigger add' and 'sundial trigger delete'.`,
		Example: `  sundial job update 3 --retries 5 --timeout 1m`,
		Args:    cobra.ExactArgs(1),
	}
	jf.add(cmd.Flags())
	cmd.Flags().StringVar(&name, "name", "", "new name")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		// PUT replaces every setting, so start from the job as it is now.
		cur, err := c.GetJob(ctx, id)
		if err != nil {
			return err
		}
		req := cur.Request()
		if cmd.Flags().Changed("name") {
			req.Name = name
		}
		if err := jf.apply(cmd.Flags(), &req, false); err != nil {
			return err
		}
		j, err := c.UpdateJob(ctx, id, req)
		if err != nil {
			return err
		}
		return printJob(cmd, o, j)
	})
	return cmd
}

func newJobDeleteCmd(o *apiOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "delete ID|NAME|GROUP/NAME", Short: "Delete a job and its triggers", Args: cobra.ExactArgs(1),
		Long: "Delete a job and its triggers; its executions stay. A job with runs in progress is refused\n" +
			"unless --force: they then finish, and their results and output are kept."}
	var force bool
	cmd.Flags().BoolVar(&force, "force", false, "delete even though runs are in progress (they finish and keep their output)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		if err := c.DeleteJob(ctx, id, force); err != nil {
			return err
		}
		if !o.machine() {
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted job %d\n", id)
		}
		return nil
	})
	return cmd
}

// newJobActionCmd makes pause and resume, which POST to /jobs/{id}/<action> and return the job.
func newJobActionCmd(o *apiOptions, action, short, done string) *cobra.Command {
	cmd := &cobra.Command{Use: action + " ID|NAME|GROUP/NAME", Short: short, Args: cobra.ExactArgs(1)}
	var note string
	if action == "pause" {
		cmd.Flags().StringVar(&note, "note", "", "why the job is paused: shown with who paused it and when until it is resumed")
	}
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		act := func(ctx context.Context, id int64) (*api.Job, error) { return c.PauseJobNoted(ctx, id, note) }
		if action == "resume" {
			act = c.ResumeJob
		}
		j, err := act(ctx, id)
		if err != nil {
			return err
		}
		if o.machine() {
			return o.encode(cmd.OutOrStdout(), j)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s job %d\n", done, id)
		return nil
	})
	return cmd
}

func newJobRunCmd(o *apiOptions) *cobra.Command {
	var params string
	cmd := &cobra.Command{Use: "run ID|NAME|GROUP/NAME [--params TEXT]", Short: "Run a job once now, outside its triggers", Args: cobra.ExactArgs(1)}
	cmd.Flags().StringVar(&params, "params", "", "give this run these params in place of the job's (not for script jobs)")
	cmd.RunE = o.run(func(ctx context.Context, c *api.Client, cmd *cobra.Command, args []string) error {
		id, err := jobRef(ctx, c, args[0])
		if err != nil {
			return err
		}
		x, err := c.RunJobWith(ctx, id, api.RunRequest{Params: params})
		if err != nil {
			return err
		}
		return printOne(cmd.OutOrStdout(), o, x, func(w io.Writer, x api.Execution) error {
			_, err := fmt.Fprintf(w, "Started execution %d of job %d (%s); follow it with: sundial exec logs -f %d\n",
				x.ID, x.JobID, x.State, x.ID)
			return err
		})
	})
	return cmd
}

// jobState is what a job does now: paused when a trigger is paused and none waits to fire.
func jobState(j api.Job) string {
	switch {
	case !j.Enabled:
		return "disabled"
	case j.Paused && j.PausedAt != nil:
		return fmt.Sprintf("paused by %s at %s: %s", j.PausedBy, when(*j.PausedAt), j.PauseNote)
	case j.Paused:
		return "paused"
	case len(j.Triggers) == 0:
		return "enabled (no triggers: runs only when run by hand)"
	}
	return "enabled"
}

// dispatchTimeoutShown is a remote job's dispatch timeout, or the server's default.
func dispatchTimeoutShown(j api.Job) string {
	switch {
	case j.App == "":
		return ""
	case j.DispatchTimeoutMs == 0:
		return "the server's (--executor-wait)"
	}
	return msDuration(j.DispatchTimeoutMs)
}
