package engine

import (
	"maps"

	"github.com/sundial-scheduler/sundial/store"
)

// A trigger's own params and data reach its fires through the execution: acquisition copies
// them onto each execution it inserts (fromTrigger), retries and recovery runs keep them, and
// the fire merges them over the job's when it starts (withTriggerData). Reading them off the
// execution, not the trigger, costs the fire path no extra read and keeps a fire's inputs
// those of the moment it was scheduled, whatever node runs it.

// fromTrigger puts the trigger's own params and data on a fire of it.
func fromTrigger(ex *store.Execution, row *store.Trigger) {
	ex.Params, ex.Data = row.Params, row.Data
}

// withTriggerData returns the job as the fire sees it: with the data its trigger carried
// merged over the job's, key by key (Quartz merges a trigger's JobDataMap over its job's).
// The job is not changed; without trigger data it is returned as is. Params need no merge:
// the execution's replace the job's (Fire.Params).
func withTriggerData(job *store.Job, ex *store.Execution) *store.Job {
	if !fromATrigger(ex) || len(ex.Data) == 0 {
		return job
	}
	cp := *job
	cp.Data = make(map[string]any, len(job.Data)+len(ex.Data))
	maps.Copy(cp.Data, job.Data)
	maps.Copy(cp.Data, ex.Data)
	return &cp
}

// persistedData is what a persisting job stores after a run returned data: the run's map
// without the keys its trigger supplied, which keep the job's own values (or stay absent).
// Quartz too persists the job's map, never the trigger's: a value the trigger gives would
// otherwise leak into the job and into the fires of its other triggers.
func persistedData(returned map[string]any, own map[string]any, ex *store.Execution) map[string]any {
	if !fromATrigger(ex) || len(ex.Data) == 0 {
		return returned
	}
	out := maps.Clone(returned)
	for k := range ex.Data {
		if v, ok := own[k]; ok {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	return out
}

// fromATrigger reports whether ex runs a trigger's time and so carries that trigger's data: a
// fire of it, or a backfill's run of it (which has no trigger id, its fire key being free).
func fromATrigger(ex *store.Execution) bool { return ex.TriggerID != 0 || ex.BackfillID != 0 }
