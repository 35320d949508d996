// Package importer brings another scheduler's jobs into Sundial: `sundial import xxl-job`
// and `sundial import quartz`.
//
// A source (importer/xxljob; the Quartz one beside it) reads the other scheduler's database
// into a Plan: the apps, calendars, and jobs with their triggers and script histories to make,
// and every item it cannot map, each with the reason. Run carries a plan out through the root
// package's Scheduler — the checks the REST API makes, never a copy of them — in one
// transaction, which it commits only when asked: a dry run rolls it back, so it reports
// exactly what an apply would do, the scheduler's refusals included. Items are matched with
// what the store holds by name (apps, calendars) or by group and name (jobs, triggers); one
// that is already there as planned is "unchanged", so a second import changes nothing.
//
// A source fills the plan's items (sundial.App, sundial.Calendar, sundial.Job,
// sundial.Trigger and the few fields beside them) and Unmapped; Run fills each item's
// Outcome; Print writes the plan as the command shows it.
package importer

import (
	"time"

	"github.com/sundial-scheduler/sundial"
)

// Action is what Run did (or, in a dry run, would do) with one item.
type Action string

// The actions.
const (
	// Create: nothing of the item's name is stored; Run creates it.
	Create Action = "create"
	// Update: the stored item differs from the planned one (Changes says where); Run
	// replaces it.
	Update Action = "update"
	// Unchanged: the stored item is as planned.
	Unchanged Action = "unchanged"
	// Refused: the scheduler's checks refused the item (Reason says why); nothing of it is
	// stored.
	Refused Action = "refused"
)

// Outcome is what Run did with an item.
type Outcome struct {
	Action Action
	// Changes names what an Update changes ("params", "timeout", "schedule").
	Changes []string
	// Reason is why a Refused item was refused.
	Reason string
}

// Plan is what an import makes: a source fills it, Run carries it out.
type Plan struct {
	// Source describes where the plan comes from ("XXL-JOB 2.x schema at mysql://…").
	Source string
	// Notes are facts the operator should know that concern no single item (the zone cron
	// expressions are read in, a guessed protocol generation).
	Notes []string

	Apps      []*App
	Calendars []*Calendar
	Jobs      []*Job
	// PausedGroups are trigger groups to pause, later additions included (Quartz's paused
	// trigger groups).
	PausedGroups []string

	// Unmapped are the source's items, or parts of items, that the plan leaves out.
	Unmapped []Unmapped
	// GroupsPaused is filled by Run: the PausedGroups it paused (the others were paused).
	GroupsPaused []string
}

// Unmapped is something of the source the plan leaves out.
type Unmapped struct {
	// Item names it in the source's terms: `xxl_job_info 7 "Sync stock": alarm e-mail "x"`.
	Item string
	// Reason says why it cannot be mapped.
	Reason string
}

// App is an executor group to put.
type App struct {
	sundial.App
	// Generation is the protocol generation of an xxl-job app ("2.x", "3.3", "3.5"),
	// stored as its ProtocolVersion (see applyProtocol).
	Generation string
	// Source names the item in the source ("xxl_job_group 3").
	Source string
	Outcome
}

// Calendar is an exclusion calendar to put. Run puts a plan's calendars bases first.
type Calendar struct {
	sundial.Calendar
	Source string
	Outcome
}

// Key names a job (or a trigger) by group and name.
type Key struct{ Group, Name string }

func (k Key) String() string { return k.Group + "/" + k.Name }

// Job is a job to create or update, with its triggers.
type Job struct {
	// Job is the job as the scheduler takes it. Its ChildJobIDs are ignored: Children name
	// the child jobs. Group defaults to "default", as the scheduler's does.
	sundial.Job
	Source string
	// Children are the jobs fired when a run of this one succeeds: jobs of this plan or
	// already stored.
	Children []Key
	// Scripts is the history of a script job's script (its Params), oldest first; its last
	// entry should be Params. A created job is saved once per entry, so its kept script
	// versions are these, with their notes. An updated job records Params once, if it
	// changed, with the last entry's note.
	Scripts []Script
	// Triggers are matched by group and name; a trigger with neither gets the names
	// ScheduleJob gives (the job's group, and its name with "#N").
	Triggers []*Trigger
	Outcome
	// ID is the job's id in the store after Run (in a dry run, the id it had or would have
	// had); 0 when refused.
	ID int64
}

// Key returns the job's group and name, with the scheduler's default group.
func (j *Job) Key() Key {
	g := j.Group
	if g == "" {
		g = "default"
	}
	return Key{g, j.Name}
}

// Script is one saved version of a script job's script.
type Script struct {
	Source string
	Note   string
}

// Trigger is a trigger of a planned job, with the state a created one starts in.
type Trigger struct {
	sundial.Trigger
	// Paused creates the trigger paused. An existing trigger keeps its state: a stopped job
	// in the source after the move (its jobs are stopped there once Sundial runs them) must
	// not pause what Sundial now runs.
	Paused bool
	// NextFire, PrevFire and TimesFired, when set, carry a created trigger's stored state
	// over from the source (Quartz's NEXT_FIRE_TIME, PREV_FIRE_TIME, TIMES_TRIGGERED)
	// instead of the first fire its schedule gives from Start.
	NextFire, PrevFire time.Time
	TimesFired         int64
	Outcome
	// Next is the trigger's next fire time as stored after Run; zero when it will not fire.
	Next time.Time
}
