// Package storetest is the conformance suite for store.Store implementations: every
// implementation runs the same Run, so the engine can rely on the same behaviour from each.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// Run runs the suite. open must return a fresh, migrated, empty store for each call; the
// subtests run in parallel, each on its own store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Clock", func(t *testing.T) { t.Parallel(); testClock(t, open(t)) })
	t.Run("Tx", func(t *testing.T) { t.Parallel(); testTx(t, open(t)) })
	t.Run("Jobs", func(t *testing.T) { t.Parallel(); testJobs(t, open(t)) })
	t.Run("JobsPagination", func(t *testing.T) { t.Parallel(); testJobsPagination(t, open(t)) })
	t.Run("JobsFilter", func(t *testing.T) { t.Parallel(); testJobsFilter(t, open(t)) })
	t.Run("Workflows", func(t *testing.T) { t.Parallel(); testWorkflows(t, open(t)) })
	t.Run("Subtasks", func(t *testing.T) { t.Parallel(); testSubtasks(t, open(t)) })
	t.Run("SubtasksMapConcurrent", func(t *testing.T) { t.Parallel(); testSubtasksMapConcurrent(t, open(t)) })
	t.Run("WorkflowRunLock", func(t *testing.T) { t.Parallel(); testWorkflowRunLock(t, open(t)) })
	t.Run("ScriptVersions", func(t *testing.T) { t.Parallel(); testScriptVersions(t, open(t)) })
	t.Run("ExecutionScriptVersion", func(t *testing.T) { t.Parallel(); testExecutionScriptVersion(t, open(t)) })
	t.Run("TriggersByNextFire", func(t *testing.T) { t.Parallel(); testTriggersByNextFire(t, open(t)) })
	t.Run("ExecutionsByCause", func(t *testing.T) { t.Parallel(); testExecutionsByCause(t, open(t)) })
	t.Run("JobsByPausedAndFailing", func(t *testing.T) { t.Parallel(); testJobsByPausedAndFailing(t, open(t)) })
	t.Run("ExecutionsByAppAndExecutor", func(t *testing.T) { t.Parallel(); testExecutionsByAppAndExecutor(t, open(t)) })
	t.Run("Triggers", func(t *testing.T) { t.Parallel(); testTriggers(t, open(t)) })
	t.Run("TriggersPagination", func(t *testing.T) { t.Parallel(); testTriggersPagination(t, open(t)) })
	t.Run("TriggerParamsData", func(t *testing.T) { t.Parallel(); testTriggerParamsData(t, open(t)) })
	t.Run("TriggerZoneRows", func(t *testing.T) { t.Parallel(); testTriggerZoneRows(t, open(t)) })
	t.Run("CatchUpAndBackfills", func(t *testing.T) { t.Parallel(); testCatchUpAndBackfills(t, open(t)) })
	t.Run("FireQuota", func(t *testing.T) { t.Parallel(); testFireQuota(t, open(t)) })
	t.Run("PauseResume", func(t *testing.T) { t.Parallel(); testPauseResume(t, open(t)) })
	t.Run("PauseAll", func(t *testing.T) { t.Parallel(); testPauseAll(t, open(t)) })
	t.Run("PauseReturnsAcquiredFires", func(t *testing.T) { t.Parallel(); testPauseReturnsAcquiredFires(t, open(t)) })
	t.Run("LockDueOrder", func(t *testing.T) { t.Parallel(); testLockDueOrder(t, open(t)) })
	t.Run("LockDueRace", func(t *testing.T) { t.Parallel(); testLockDueRace(t, open(t)) })
	t.Run("LockDueSkipsLocked", func(t *testing.T) { t.Parallel(); testLockDueSkipsLocked(t, open(t)) })
	t.Run("UpdateAfterFire", func(t *testing.T) { t.Parallel(); testUpdateAfterFire(t, open(t)) })
	t.Run("Calendars", func(t *testing.T) { t.Parallel(); testCalendars(t, open(t)) })
	t.Run("ExecutionsInsert", func(t *testing.T) { t.Parallel(); testExecutionsInsert(t, open(t)) })
	t.Run("ExecutionLifecycle", func(t *testing.T) { t.Parallel(); testExecutionLifecycle(t, open(t)) })
	t.Run("HistoryPartitions", func(t *testing.T) { t.Parallel(); testHistoryPartitions(t, open(t)) })
	t.Run("MarkRunningAlone", func(t *testing.T) { t.Parallel(); testMarkRunningAlone(t, open(t)) })
	t.Run("MarkRunningLimited", func(t *testing.T) { t.Parallel(); testMarkRunningLimited(t, open(t)) })
	t.Run("CompleteTwice", func(t *testing.T) { t.Parallel(); testCompleteTwice(t, open(t)) })
	t.Run("AlarmReclaim", func(t *testing.T) { t.Parallel(); testAlarmReclaim(t, open(t)) })
	t.Run("JobAlarmState", func(t *testing.T) { t.Parallel(); testJobAlarmState(t, open(t)) })
	t.Run("NoEndedTwin", func(t *testing.T) { t.Parallel(); testNoEndedTwin(t, open(t)) })
	t.Run("NoTwinWhileEnding", func(t *testing.T) { t.Parallel(); testNoTwinWhileEnding(t, open(t)) })
	t.Run("ExecutionsAcquireRace", func(t *testing.T) { t.Parallel(); testExecutionsAcquireRace(t, open(t)) })
	t.Run("ExecutionsList", func(t *testing.T) { t.Parallel(); testExecutionsList(t, open(t)) })
	t.Run("ExecutionsListByFired", func(t *testing.T) { t.Parallel(); testExecutionsListByFired(t, open(t)) })
	t.Run("ExecutionSweeps", func(t *testing.T) { t.Parallel(); testExecutionSweeps(t, open(t)) })
	t.Run("ExecutionsLatest", func(t *testing.T) { t.Parallel(); testExecutionsLatest(t, open(t)) })
	t.Run("Reports", func(t *testing.T) { t.Parallel(); testReports(t, open(t)) })
	t.Run("ReportsScope", func(t *testing.T) { t.Parallel(); testReportsScope(t, open(t)) })
	t.Run("Recovery", func(t *testing.T) { t.Parallel(); testRecovery(t, open(t)) })
	t.Run("Logs", func(t *testing.T) { t.Parallel(); testLogs(t, open(t)) })
	t.Run("Nodes", func(t *testing.T) { t.Parallel(); testNodes(t, open(t)) })
	t.Run("Fencing", func(t *testing.T) { t.Parallel(); testFencing(t, open(t)) })
	t.Run("RecordDispatches", func(t *testing.T) { t.Parallel(); testRecordDispatches(t, open(t)) })
	t.Run("Leases", func(t *testing.T) { t.Parallel(); testLeases(t, open(t)) })
	t.Run("Apps", func(t *testing.T) { t.Parallel(); testApps(t, open(t)) })
	t.Run("Registry", func(t *testing.T) { t.Parallel(); testRegistry(t, open(t)) })
	t.Run("ExecutorExecutions", func(t *testing.T) { t.Parallel(); testExecutorExecutions(t, open(t)) })
	t.Run("ExecutorInstances", func(t *testing.T) { t.Parallel(); testExecutorInstances(t, open(t)) })
	t.Run("RunOutlivesItsJob", func(t *testing.T) { t.Parallel(); testRunOutlivesItsJob(t, open(t)) })
	t.Run("AppCredentials", func(t *testing.T) { t.Parallel(); testAppCredentials(t, open(t)) })
	t.Run("ClusterKeys", func(t *testing.T) { t.Parallel(); testClusterKeys(t, open(t)) })
	t.Run("KillRequests", func(t *testing.T) { t.Parallel(); testKillRequests(t, open(t)) })
	t.Run("Users", func(t *testing.T) { t.Parallel(); testUsers(t, open(t)) })
	t.Run("APITokens", func(t *testing.T) { t.Parallel(); testAPITokens(t, open(t)) })
	t.Run("Sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("UserRoles", func(t *testing.T) { t.Parallel(); testUserRoles(t, open(t)) })
	t.Run("Audit", func(t *testing.T) { t.Parallel(); testAudit(t, open(t)) })
}

// Helpers. They fail the test on any error, so the tests read as the behaviour they check.

// result carries a call's value and error, so that get(call()).ok(t) reads as the value.
type result[T any] struct {
	v   T
	err error
}

func get[T any](v T, err error) result[T] { return result[T]{v, err} }

// recordSend writes one run's send record (ExecutionsRecordDispatches) and reports whether
// it applied.
func recordSend(ctx context.Context, s store.Store, o store.Owner, id int64, address, instance string, index, total int, msg string) (bool, error) {
	return applied(s.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{{Owner: o, ID: id, Address: address, Instance: instance,
		ShardIndex: index, ShardTotal: total, Message: msg}}))
}

// recordAccepted writes one run's acceptance (ExecutionsRecordDispatches) and reports
// whether it applied.
func recordAccepted(ctx context.Context, s store.Store, o store.Owner, id int64) (bool, error) {
	return applied(s.ExecutionsRecordDispatches(ctx, []store.DispatchRecord{{Owner: o, ID: id, Accepted: true}}))
}

func applied(ok []bool, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	return ok[0], nil
}

func (r result[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func sameIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("%s = %v, want %v", what, g, w)
	}
}

func newJob(t *testing.T, s store.Querier, group, name string) *store.Job {
	t.Helper()
	j := &store.Job{Group: group, Name: name, TargetKind: store.TargetLocal, Handler: "h", Enabled: true}
	noErr(t, s.JobInsert(context.Background(), j))
	return j
}

func newTrigger(t *testing.T, s store.Querier, jobID int64, group, name string, next int64) *store.Trigger {
	t.Helper()
	tr := &store.Trigger{JobID: jobID, Group: group, Name: name, Kind: store.TriggerSimple, Spec: `{"interval_ms":1000}`,
		StartAt: next, NextFireAt: next}
	noErr(t, s.TriggerInsert(context.Background(), tr))
	return tr
}

// newTriggers makes n waiting triggers of one job due at next.
func newTriggers(t *testing.T, s store.Querier, n int, next int64) []int64 {
	t.Helper()
	j := newJob(t, s, "g", fmt.Sprintf("job-%d", next))
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = newTrigger(t, s, j.ID, "g", fmt.Sprintf("t-%d-%d", next, i), next).ID
	}
	return ids
}

// own names the life of node that the suite's executions, inserted without an incarnation,
// belong to.
func own(node string) store.Owner { return store.Owner{Node: node} }

func ids[T any](xs []T, id func(T) int64) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func triggerID(t *store.Trigger) int64     { return t.ID }
func jobID(j *store.Job) int64             { return j.ID }
func executionID(x *store.Execution) int64 { return x.ID }

func testClock(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := get(s.DBNow(ctx)).ok(t)
	b := get(s.DBNow(ctx)).ok(t)
	if a < 1_600_000_000_000 || b < a {
		t.Fatalf("DBNow = %d then %d: not Unix milliseconds moving forward", a, b)
	}
}

func testTx(t *testing.T, s store.Store) {
	ctx := context.Background()
	tx := get(s.Begin(ctx)).ok(t)
	j := newJob(t, tx, "g", "rolled-back")
	newTrigger(t, tx, j.ID, "g", "t", 1)
	noErr(t, tx.Rollback())
	_, err := s.JobGetByKey(ctx, "g", "rolled-back")
	wantErr(t, err, store.ErrNotFound)

	tx = get(s.Begin(ctx)).ok(t)
	j = newJob(t, tx, "g", "committed")
	tr := newTrigger(t, tx, j.ID, "g", "t", 1)
	noErr(t, tx.Commit())
	noErr(t, tx.Rollback()) // a no-op after Commit
	got := get(s.TriggerGet(ctx, tr.ID)).ok(t)
	equal(t, "trigger job", got.JobID, j.ID)
}
