package store

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Errors returned by every implementation. They are wrapped with the offending key, so test
// them with errors.Is.
var (
	// ErrNotFound means the row named by the call does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means a unique key (a job's or trigger's group and name, a calendar's
	// name, an execution's trigger, scheduled time, attempt and shard) is taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrInUse means the row is still referenced (a calendar used by a trigger, a job that
	// does not exist for a new trigger).
	ErrInUse = errors.New("in use")
	// ErrConflict means an update carried a stale Version.
	ErrConflict = errors.New("version conflict")
	// ErrLimit means the call would pass a limit (the sub-tasks of one map).
	ErrLimit = errors.New("over the limit")
)

// ExistsError is ErrAlreadyExists for a named row. Its message is the whole of what a user
// needs ("job default/tick already exists"), so callers return it as it is rather than
// wrapping it in clauses that repeat the name.
type ExistsError struct {
	Kind string // job, trigger, user, token
	Key  string // its name: GROUP/NAME for a job or a trigger
	// Field is the request field that carried the taken value, when the key is not the
	// row's name (an executor's address, an xxl-job app's access token); "" otherwise.
	Field string
	// Holder names who has it ("app billing") when that is not the key itself; "" otherwise.
	Holder string
}

func (e *ExistsError) Error() string {
	if e.Holder != "" {
		return e.Kind + " " + e.Key + " is taken by " + e.Holder
	}
	return e.Kind + " " + e.Key + " already exists"
}

// Is makes errors.Is(err, ErrAlreadyExists) hold.
func (e *ExistsError) Is(target error) bool { return target == ErrAlreadyExists }

// Querier is every store operation. It is implemented both by the Store (each call in its
// own transaction) and by a Tx (all calls in one transaction), so code that must write several
// rows atomically takes a Querier and is handed a Tx.
type Querier interface {
	// DBNow returns the database's clock in Unix milliseconds.
	DBNow(ctx context.Context) (int64, error)

	Subtasks

	// JobInsert stores j and sets its ID, CreatedAt and UpdatedAt.
	JobInsert(ctx context.Context, j *Job) error
	JobGet(ctx context.Context, id int64) (*Job, error)
	// JobsGet returns those of the jobs ids that exist, in no particular order.
	JobsGet(ctx context.Context, ids []int64) ([]*Job, error)
	JobGetByKey(ctx context.Context, group, name string) (*Job, error)
	JobList(ctx context.Context, f JobFilter) ([]*Job, error)
	// JobUpdate overwrites every field of the job j.ID but the timestamps.
	JobUpdate(ctx context.Context, j *Job) error
	// JobSetData replaces the job's data map (a run of a PersistData job).
	JobSetData(ctx context.Context, id int64, data map[string]any) error
	// JobSetPause records who paused the job, why and when (Job.PausedBy, PauseNote,
	// PausedAt); empty values and 0 clear it, on resume.
	JobSetPause(ctx context.Context, id int64, by, note string, at int64) error
	// JobCountResult counts a final result of the job: a failure adds one to its
	// ConsecutiveFailures, a success sets it to 0. It returns the count after.
	JobCountResult(ctx context.Context, id int64, failed bool) (int, error)
	// JobDelete deletes the job and its triggers; its executions stay as history.
	JobDelete(ctx context.Context, id int64) error

	// ScriptVersionAdd stores v as the job's next script version (one more than its newest,
	// from 1) and the job's current ScriptVersion, sets its ID, Version and CreatedAt, and
	// drops the job's versions beyond the newest ScriptVersionsKept.
	ScriptVersionAdd(ctx context.Context, v *ScriptVersion) error
	// ScriptVersionList lists the job's kept script versions, newest first.
	ScriptVersionList(ctx context.Context, jobID int64) ([]*ScriptVersion, error)
	ScriptVersionGet(ctx context.Context, jobID, version int64) (*ScriptVersion, error)

	// TriggerInsert stores t and sets its ID, Version, CreatedAt, UpdatedAt and State: a
	// trigger inserted as waiting into a paused group (or while everything is paused) is
	// stored paused.
	TriggerInsert(ctx context.Context, t *Trigger) error
	TriggerGet(ctx context.Context, id int64) (*Trigger, error)
	TriggerGetByKey(ctx context.Context, group, name string) (*Trigger, error)
	TriggerList(ctx context.Context, f TriggerFilter) ([]*Trigger, error)
	// TriggerUpdate overwrites the trigger t.ID if its Version still equals t.Version
	// (ErrConflict otherwise), and sets t.Version to the new version.
	TriggerUpdate(ctx context.Context, t *Trigger) error
	TriggerDelete(ctx context.Context, id int64) error
	// TriggersPause moves the selected waiting triggers to paused. Pausing a group (or
	// everything) also pauses triggers inserted into it later. Fires of those triggers that
	// a node acquired ahead of time and has not started go back to their trigger, whose next
	// fire rewinds to the first of them. It returns the count of triggers moved.
	TriggersPause(ctx context.Context, sel TriggerSelector) (int64, error)
	// TriggersResume moves the selected paused triggers to waiting and forgets group pauses
	// the selection covers. The engine applies misfire policies to the overdue ones.
	TriggersResume(ctx context.Context, sel TriggerSelector) (int64, error)
	// TriggerSetError moves a trigger to the error state with the reason.
	TriggerSetError(ctx context.Context, id int64, msg string) error
	// PausedGroups lists the paused trigger groups; PauseAllGroups stands for "everything".
	PausedGroups(ctx context.Context) ([]string, error)

	// TriggersLockDue locks and returns up to limit waiting triggers with NextFireAt <=
	// dueBefore, earliest first and then by priority, highest first. Rows locked by another
	// transaction are skipped, not waited for. Call it in a Tx: the locks last until commit.
	TriggersLockDue(ctx context.Context, dueBefore int64, limit int) ([]*Trigger, error)
	// TriggersUpdateAfterFire advances fired triggers in one statement and bumps their
	// versions. It returns how many rows it updated.
	TriggersUpdateAfterFire(ctx context.Context, us []TriggerFireUpdate) (int64, error)

	// CalendarPut inserts or replaces a calendar.
	CalendarPut(ctx context.Context, c *Calendar) error
	CalendarGet(ctx context.Context, name string) (*Calendar, error)
	// CalendarList lists calendars by name after afterName.
	CalendarList(ctx context.Context, afterName string, limit int) ([]*Calendar, error)
	// CalendarDelete fails with ErrInUse while a trigger or calendar refers to it.
	CalendarDelete(ctx context.Context, name string) error

	// ExecutionsInsert inserts es in one statement and sets their IDs. An execution whose
	// (TriggerID, ScheduledAt, Attempt, ShardIndex) a live execution (pending, acquired or
	// running) already has is not inserted: it is returned in dups with ID 0, and the rest are
	// inserted. Executions inserted in a terminal state go straight to the history.
	ExecutionsInsert(ctx context.Context, es []*Execution) (dups []*Execution, err error)
	ExecutionGet(ctx context.Context, id int64) (*Execution, error)
	// ExecutionsGet returns those of the executions ids that exist, in no particular order.
	ExecutionsGet(ctx context.Context, ids []int64) ([]*Execution, error)
	ExecutionList(ctx context.Context, f ExecutionFilter) ([]*Execution, error)
	// ExecutionsLockDuePending locks and returns up to limit pending executions with
	// ScheduledAt <= dueBefore, earliest first, skipping rows other transactions hold.
	ExecutionsLockDuePending(ctx context.Context, dueBefore int64, limit int) ([]*Execution, error)
	// ExecutionsAcquire moves the given pending executions to acquired, owned by o, and
	// returns the IDs that moved.
	ExecutionsAcquire(ctx context.Context, o Owner, ids []int64) ([]int64, error)
	// ExecutionsMarkRunning moves the given executions from acquired by o to running,
	// stamping FiredAt with firedAt or, for a fire claimed ahead of its time, ScheduledAt, and
	// ScriptVersion with the job's current one; it returns the IDs that moved: the fires o
	// may run.
	ExecutionsMarkRunning(ctx context.Context, o Owner, ids []int64, firedAt int64) ([]int64, error)
	// ExecutionsMarkRunningAlone is ExecutionsMarkRunning for fires of jobs whose concurrency
	// policy forbids two runs at once, across the cluster: a fire whose job runs for another
	// owner than o, or that follows a fire of the same job claimed in this call, is not moved
	// and is returned in busy, still acquired by o. Claims of one job's fires by several
	// nodes are serialised on the job's row. A job in limits may run that many fires at once
	// instead (the at_most policy, less the runs o has apart from ids): its fire is moved
	// while its runs for other owners and the fires moved in this call are fewer, and is
	// busy otherwise. The runs of a job in anyOwner count whatever their owner, o's too
	// (a remote job's: its runs are its executors', which o does not track once handed over).
	ExecutionsMarkRunningAlone(ctx context.Context, o Owner, ids []int64, limits map[int64]int, anyOwner map[int64]bool, firedAt int64) (won, busy []int64, err error)
	// ExecutionsComplete moves running executions to the results' terminal states, whoever
	// runs them (an executor reports to any node), and returns the IDs that moved.
	ExecutionsComplete(ctx context.Context, rs []ExecutionResult) ([]int64, error)
	// ExecutionsCompleteOwned is ExecutionsComplete for the runs of one node's life: only
	// executions still running for o move, so a life the cluster declared dead writes nothing.
	ExecutionsCompleteOwned(ctx context.Context, o Owner, rs []ExecutionResult) ([]int64, error)
	// ExecutionsReleaseAcquired moves the acquired executions of o back to pending with no
	// node, and returns how many moved.
	ExecutionsReleaseAcquired(ctx context.Context, o Owner) (int64, error)
	// ExecutionsOwners lists the lives of node that own live (acquired or running)
	// executions: a node that starts again recovers those of its earlier lives.
	ExecutionsOwners(ctx context.Context, node string) ([]Owner, error)
	// ExecutionsCountLive counts each job's acquired and running executions (the fires in
	// flight), for the concurrency policies. Jobs with none are absent from the map.
	ExecutionsCountLive(ctx context.Context, jobIDs []int64) (map[int64]int, error)
	// ExecutionsLatest returns the id of each job's newest execution, live or ended; a job
	// that never ran (or does not exist) has no entry. One statement answers for many jobs.
	ExecutionsLatest(ctx context.Context, jobIDs []int64) (map[int64]int64, error)
	// ExecutionsAlarmPending lists executions whose alarm is pending, by id after afterID.
	ExecutionsAlarmPending(ctx context.Context, afterID int64, limit int) ([]*Execution, error)
	// ExecutionsSetAlarm moves the given executions' alarm state from one state to another
	// and returns the IDs that moved.
	ExecutionsSetAlarm(ctx context.Context, ids []int64, from, to AlarmState) ([]int64, error)
	// ExecutionsAlarmReclaim claims again up to limit alarms left sending (AlarmSending) for
	// longer than olderThan by the database clock, as by a node that died mid-delivery, and
	// returns them; each is claimed by one caller.
	ExecutionsAlarmReclaim(ctx context.Context, olderThan time.Duration, limit int) ([]*Execution, error)
	// JobAlarmGet returns the job's alarm state; a job with none yet gets a zero row
	// (Version 0) with its JobID.
	JobAlarmGet(ctx context.Context, jobID int64) (*AlarmStateRow, error)
	// JobAlarmPut writes st if the stored row is still at st.Version (0: none stored) and
	// then bumps st.Version; ErrConflict when another writer came first.
	JobAlarmPut(ctx context.Context, st *AlarmStateRow) error
	// ReportsRefresh recomputes the report rows of one UTC day (YYYY-MM-DD) from the
	// executions, one row per job with executions that day, dropping rows of jobs that have
	// none any more. It returns how many rows the day has.
	ReportsRefresh(ctx context.Context, day string) (int, error)
	// ReportsDaily returns the report rows of the days from to to (inclusive, YYYY-MM-DD) of
	// one job, or summed over every job for jobID 0, by day, cut to the jobs a reader of
	// scope may see (Readable; nil: every job). Days without executions are absent.
	ReportsDaily(ctx context.Context, from, to string, jobID int64, scope []string) ([]*ReportDay, error)

	// ExecutionsDeleteFiredBefore deletes up to limit terminal executions fired before
	// firedBefore, oldest first, with their log lines, and returns how many it deleted: the
	// retention sweep calls it until it returns less than limit. An execution whose alarm
	// is not delivered yet (pending or sending) stays until it is: retention must not take
	// an alarm with it.
	ExecutionsDeleteFiredBefore(ctx context.Context, firedBefore int64, limit int) (int64, error)
	// HistoryPartitionsEnsure makes sure the history has a partition for each UTC day from
	// the day of now to ahead days after it, and returns the days it created (YYYY-MM-DD).
	// Rows of those days that the default partition took are moved into them. Where the
	// history is not partitioned (SQLite, MariaDB/MySQL) it does nothing.
	HistoryPartitionsEnsure(ctx context.Context, now int64, ahead int) ([]string, error)
	// HistoryPartitions lists the history's day partitions, oldest first (none where the
	// history is not partitioned).
	HistoryPartitions(ctx context.Context) ([]HistoryPartition, error)
	// HistoryDropPartitions drops, with their log lines, the day partitions that end at or
	// before firedBefore and hold no execution fired at or after it and no alarm not yet
	// delivered (so dropping one deletes exactly what ExecutionsDeleteFiredBefore would), and
	// returns the days dropped and the rows they held. What is left before the horizon (the
	// boundary day, the default partition, a day holding a late fire or an alarm on its way)
	// is ExecutionsDeleteFiredBefore's.
	HistoryDropPartitions(ctx context.Context, firedBefore int64) ([]string, int64, error)
	// ExecutionsLoseRunning moves the running executions of o, a life that died, to lost,
	// stamping FinishedAt with the database clock, and returns them as they are after the
	// move. Runs an executor accepted (DispatchAccepted) are not the node's to lose: they go
	// on there, report to any node, and are lost only with their executor
	// (ExecutionsLoseOnExecutor). A run whose dispatch was recorded but never accepted is
	// the node's: no executor said it has it.
	ExecutionsLoseRunning(ctx context.Context, o Owner) ([]*Execution, error)

	// ExecutionsRecordDispatches writes many runs' dispatch records with a few statements.
	// A send records where a running execution of its owner is being sent: the executor
	// address, the instance (the executor process the address was registered by, "" for a
	// manual address), its shard of a broadcast and the dispatch message; an acceptance
	// (Accepted) that the executor took the run (TriggerCode DispatchAccepted): from then on
	// the run is the executor's. Each moves nothing: it is a compare-and-set on state running
	// and the record's owner, and reports false when the execution is no longer the owner's
	// to run (a send's sender must not send it). Two sends of one run apply in order. It
	// reports, per record in order, whether it applied. On an error some may have applied:
	// each is a compare-and-set that may be written again.
	ExecutionsRecordDispatches(ctx context.Context, recs []DispatchRecord) ([]bool, error)
	// ExecutionsLoseOnExecutor moves the running executions of the app's jobs sent to the
	// executor address to lost, stamping FinishedAt with the database clock, and returns them
	// as they are after the move.
	ExecutionsLoseOnExecutor(ctx context.Context, app, address string) ([]*Execution, error)
	// ExecutionsRunningByExecutor counts the running executions sent to each executor of the
	// app (of every app for ""), keyed by app and address; executors with none are absent.
	ExecutionsRunningByExecutor(ctx context.Context, app string) (map[ExecutorKey]int, error)
	// ExecutionsRunningOnExecutor lists the running executions of the app's jobs sent to the
	// executor address, by id, with the instance each was sent to: what the executor's
	// heartbeat is checked against.
	ExecutionsRunningOnExecutor(ctx context.Context, app, address string) ([]ExecutorRun, error)
	// ExecutionDispatchedTo tells which executor a running remote execution was handed to:
	// its job's app, the address and instance recorded at dispatch (ErrNotFound when it is
	// not running). The server checks what an executor reports about a run against it.
	ExecutionDispatchedTo(ctx context.Context, id int64) (*Dispatched, error)
	// ExecutionLostTo is ExecutionDispatchedTo for an execution declared lost: the instance
	// it had been handed to is kept with it when it is lost (ErrNotFound when the execution is
	// not lost; Address "" for one that ran in process). A late result is checked against it.
	ExecutionLostTo(ctx context.Context, id int64) (*Dispatched, error)
	// ExecutionsDispatchedTo and ExecutionsLostTo are the two above for many executions in one
	// read (a batch of results): the ones found, by id; an id absent is not running (not
	// lost).
	ExecutionsDispatchedTo(ctx context.Context, ids []int64) (map[int64]*Dispatched, error)
	ExecutionsLostTo(ctx context.Context, ids []int64) (map[int64]*Dispatched, error)
	// ExecutionsLoseOnExecutorIDs is ExecutionsLoseOnExecutor for the runs given only, as they
	// were read (ExecutionsRunningOnExecutor): those still running, sent to address, to the
	// same instance at the same dispatch time, move to lost and are returned. A run sent again
	// since (to the executor's new instance) was judged on what is no longer so, and is kept.
	ExecutionsLoseOnExecutorIDs(ctx context.Context, address string, runs []ExecutorRun) ([]*Execution, error)
	// ExecutionsCompleteLate records the results of executions that had been declared lost:
	// each execution still lost takes the result's state, codes, message and times (a
	// compare-and-set on state lost), and the IDs that changed are returned. It moves nothing
	// between tables and inserts nothing.
	ExecutionsCompleteLate(ctx context.Context, rs []ExecutionResult) ([]int64, error)

	// KillRequest records that the in-process run id on node must be killed, for that node to
	// pick up (KillRequestsTake); a second request for the same run is a no-op.
	KillRequest(ctx context.Context, id int64, node string) error
	// KillRequestsTake deletes and returns the ids of the kill requests addressed to node.
	KillRequestsTake(ctx context.Context, node string) ([]int64, error)

	// AppPut inserts or replaces an app, setting its timestamps.
	AppPut(ctx context.Context, a *App) error
	AppGet(ctx context.Context, name string) (*App, error)
	// AppList lists apps by name.
	AppList(ctx context.Context) ([]*App, error)
	// AppDelete deletes an app's row, its executor credential and its registered instances
	// (ErrNotFound when it has none of them); its jobs stay, naming it.
	AppDelete(ctx context.Context, name string) error

	// AppCredentialCreate stores an app's first executor credential (ErrAlreadyExists when it
	// has one); AppCredentialRotate replaces its hash and sets RotatedAt (ErrNotFound when it
	// has none). The caller sets the times.
	AppCredentialCreate(ctx context.Context, c *AppCredential) error
	AppCredentialRotate(ctx context.Context, c *AppCredential) error
	// AppCredentialDelete revokes an app's executor credential: its secret stops working at
	// once (ErrNotFound when the app has none).
	AppCredentialDelete(ctx context.Context, app string) error
	// AppCredentialByHash finds the credential with hash (ErrNotFound when none has it).
	AppCredentialByHash(ctx context.Context, hash string) (*AppCredential, error)
	// AppCredentialList lists the credentials by app, hashes included.
	AppCredentialList(ctx context.Context) ([]*AppCredential, error)

	// ClusterKeyCreate stores a cluster signing key under its generation (ErrAlreadyExists
	// when another node stored that generation first). ClusterKeys lists them newest first.
	ClusterKeyCreate(ctx context.Context, k *ClusterKey) error
	ClusterKeys(ctx context.Context) ([]*ClusterKey, error)

	// RegistryBeat records that the executor instance is alive now by the database clock,
	// inserting it on its first beat and replacing its handlers.
	// The instance is the executor process's id ("" from executors that send none), version
	// the version it reports ("" when it reports none). An address belongs to one app: while
	// another app's row holds it (until that app leaves or RegistrySweep takes it), the beat
	// changes nothing and is an *ExistsError (ErrAlreadyExists) naming the holder, decided by
	// the database's unique key on the address, so two apps racing for it cannot both win.
	RegistryBeat(ctx context.Context, app, address, instance, version string, handlers []string) error
	// RegistryBeatFor is RegistryBeat for an instance that may stay silent for liveFor (when
	// longer than the threshold RegistryLive and RegistrySweep are given): executors that
	// beat at their own pace, as XXL-JOB's every 30 s. They report no version.
	RegistryBeatFor(ctx context.Context, app, address, instance string, handlers []string, liveFor time.Duration) error
	// RegistryTouch records that the instances are alive now by the database clock, as their
	// beats would, and changes nothing else: the node holding an instance's stream vouches for
	// it while the stream carries its pings. Only the rows of those very instances (app,
	// address and instance) are touched, none is inserted; it returns how many were touched.
	RegistryTouch(ctx context.Context, ins []InstanceKey) (int64, error)
	// RegistryLeave forgets an instance (a graceful stop); it reports whether one was there.
	RegistryLeave(ctx context.Context, app, address string) (bool, error)
	// RegistryLive lists the instances of app (of every app for "") seen within olderThan by
	// the database clock, by app and address.
	RegistryLive(ctx context.Context, app string, olderThan time.Duration) ([]*Instance, error)
	// RegistryAt lists the instances of every app at address seen within olderThan by the
	// database clock (as RegistryLive), by app.
	RegistryAt(ctx context.Context, address string, olderThan time.Duration) ([]*Instance, error)
	// RegistrySweep deletes the instances silent for longer than olderThan by the database
	// clock whose last beat is at or after seenSince (Unix ms, database clock; 0 for all) and
	// returns them. An instance that beats meanwhile stays.
	RegistrySweep(ctx context.Context, olderThan time.Duration, seenSince int64) ([]*Instance, error)

	// ExecutionLogAppend stores lines for an execution; a line number already stored is
	// ignored, as are lines past the store's per-execution cap. It returns how many lines it
	// stored.
	ExecutionLogAppend(ctx context.Context, execID int64, lines []LogLine) (int64, error)
	// ExecutionLogsAppend is ExecutionLogAppend for several executions at once, in one
	// statement per chunk of rows: the output of a batch of results.
	ExecutionLogsAppend(ctx context.Context, batch []ExecutionLines) (int64, error)
	// ExecutionLogList returns up to limit lines with Line > afterLine, in order.
	ExecutionLogList(ctx context.Context, execID int64, afterLine int64, limit int) ([]LogLine, error)

	// NodeRegister records a new life of a node: it inserts the node's row, or replaces an
	// earlier life's (StartedAt and LastSeen = the database's now). It returns the node as
	// stored.
	NodeRegister(ctx context.Context, o Owner, name string) (*Node, error)
	// NodeHeartbeat records that the life o is alive now by the database clock. It never
	// inserts: when the row is gone or belongs to another life (the cluster declared o dead,
	// or the node started again) it fails with ErrNotFound.
	NodeHeartbeat(ctx context.Context, o Owner, name string) (*Node, error)
	// NodeHold locks the row of the life o for the rest of the transaction, shared (ErrNotFound
	// when it is gone): work a node acquires in that transaction cannot slip past a recovery
	// that declares o dead.
	NodeHold(ctx context.Context, o Owner) error
	NodeList(ctx context.Context) ([]*Node, error)
	// NodesStale lists nodes whose last heartbeat is older than olderThan by the database
	// clock.
	NodesStale(ctx context.Context, olderThan time.Duration) ([]*Node, error)
	// NodeDelete forgets the life o (ErrNotFound when the row is gone or another life's).
	NodeDelete(ctx context.Context, o Owner) error
	// NodeDeleteStale forgets the life o if it is still silent for longer than olderThan by
	// the database clock, and reports whether it did: the leader declares a node dead with it,
	// in the transaction that recovers the node's work, so a node that beat meanwhile stays.
	NodeDeleteStale(ctx context.Context, o Owner, olderThan time.Duration) (bool, error)

	// FireQuotaTake runs take on the cluster's fire-rate state of each app (see
	// engine/quota.go; "" for an app that has none yet) under a lock that serializes every
	// node's takes, and stores the states take returns, in one transaction. take may run more
	// than once (the transaction is run again when the database broke a deadlock).
	FireQuotaTake(ctx context.Context, apps []string, take func(states map[string]string) map[string]string) error

	// LeaseAcquire takes the lease for holder if it is free or expired by the database clock,
	// or renews it if holder holds it, for ttl. It reports the lease as it is afterwards and
	// whether holder holds it.
	LeaseAcquire(ctx context.Context, name, holder string, ttl time.Duration) (l *Lease, held bool, err error)
	// LeaseRelease gives the lease up if holder holds it; it reports whether it did.
	LeaseRelease(ctx context.Context, name, holder string) (bool, error)
	LeaseGet(ctx context.Context, name string) (*Lease, error)

	// UserInsert stores u and sets its ID and timestamps; a taken name is ErrAlreadyExists.
	UserInsert(ctx context.Context, u *User) error
	UserGet(ctx context.Context, id int64) (*User, error)
	UserGetByName(ctx context.Context, name string) (*User, error)
	// UserSetPassword replaces the user's password hash and clears any reset token.
	UserSetPassword(ctx context.Context, id int64, passwordHash string) error
	// UserList lists users by id after afterID.
	UserList(ctx context.Context, afterID int64, limit int) ([]*User, error)
	// UserUpdate overwrites the user's role, scope, scripts permission, disabled flag and
	// reset token.
	UserUpdate(ctx context.Context, u *User) error
	// UserGetByResetHash finds the user whose outstanding reset token has this hash.
	UserGetByResetHash(ctx context.Context, hash string) (*User, error)

	// APITokenInsert stores t and sets its ID and CreatedAt; the user must exist
	// (ErrNotFound otherwise).
	APITokenInsert(ctx context.Context, t *APIToken) error
	// APITokenGetByHash finds a token by the hash of its secret, expired or not.
	APITokenGetByHash(ctx context.Context, hash string) (*APIToken, error)
	// APITokenList lists the tokens of a user (every user's for userID 0) by id after
	// afterID.
	APITokenList(ctx context.Context, userID, afterID int64, limit int) ([]*APIToken, error)
	APITokenDelete(ctx context.Context, id int64) error
	// APITokenTouch sets the token's LastUsedAt to at if it is older than at-minInterval,
	// so a busy token costs one write a minute, not one a request.
	APITokenTouch(ctx context.Context, id, at, minInterval int64) error

	// SessionInsert stores a session and sets CreatedAt; the user must exist.
	SessionInsert(ctx context.Context, s *Session) error
	// SessionGet finds a session by the hash of its secret, expired or not.
	SessionGet(ctx context.Context, hash string) (*Session, error)
	SessionDelete(ctx context.Context, hash string) error
	// SessionsDeleteExpired deletes sessions that expired at or before now and returns how
	// many it deleted.
	SessionsDeleteExpired(ctx context.Context, now int64) (int64, error)
	// SessionsDeleteUser ends every session of the user but keep (a hash; "" for none) and
	// returns how many it ended.
	SessionsDeleteUser(ctx context.Context, userID int64, keep string) (int64, error)

	// BackfillInsert stores b (state running) and sets its ID, CreatedAt and UpdatedAt.
	BackfillInsert(ctx context.Context, b *Backfill) error
	BackfillGet(ctx context.Context, id int64) (*Backfill, error)
	// BackfillLock is BackfillGet locking the row for the transaction.
	BackfillLock(ctx context.Context, id int64) (*Backfill, error)
	// BackfillList lists the job's backfills (all jobs' when jobID is 0), newest first.
	BackfillList(ctx context.Context, jobID int64) ([]*Backfill, error)
	// BackfillsLockRunning locks up to limit running backfills, skipping those another
	// transaction holds, oldest first.
	BackfillsLockRunning(ctx context.Context, limit int) ([]*Backfill, error)
	// BackfillUpdate writes b's State, CursorAt and Created, and sets UpdatedAt.
	BackfillUpdate(ctx context.Context, b *Backfill) error
	// ExecutionsLiveOfBackfill counts the backfill's live executions.
	ExecutionsLiveOfBackfill(ctx context.Context, backfillID int64) (int, error)
	// WorkflowRunsLiveOfBackfill counts the backfill's workflow runs running or queued (a backfill
	// of a workflow's trigger job: its fires end at once, its runs go on).
	WorkflowRunsLiveOfBackfill(ctx context.Context, backfillID int64) (int, error)
	// ExecutionsCancelPendingOfBackfill ends the backfill's pending executions as canceled
	// (FinishedAt now) and returns how many.
	ExecutionsCancelPendingOfBackfill(ctx context.Context, backfillID, now int64) (int, error)
	// ExecutionsCancelUnstarted moves those of the executions ids that have not started
	// (pending, or acquired by a node that has not run them) to the history as canceled with
	// msg, and returns the IDs that moved: a node that held one finds it gone and runs nothing.
	ExecutionsCancelUnstarted(ctx context.Context, ids []int64, msg string) ([]int64, error)

	// WorkflowInsert stores w and sets its ID, Version and timestamps (an ExistsError when
	// the name is taken).
	WorkflowInsert(ctx context.Context, w *Workflow) error
	WorkflowGet(ctx context.Context, id int64) (*Workflow, error)
	WorkflowGetByName(ctx context.Context, name string) (*Workflow, error)
	// WorkflowLock returns the workflow with its row locked until the transaction ends:
	// starting a run, deciding its overlap policy and deleting the workflow all take it, so a
	// run cannot start beside a delete, nor two starts decide on the same running runs.
	WorkflowLock(ctx context.Context, id int64) (*Workflow, error)
	// WorkflowList lists workflows by id after afterID.
	WorkflowList(ctx context.Context, afterID int64, limit int) ([]*Workflow, error)
	// WorkflowUpdate overwrites the description, graph and params of w.ID if its Version
	// still equals w.Version (ErrConflict otherwise), and bumps w.Version.
	WorkflowUpdate(ctx context.Context, w *Workflow) error
	// WorkflowDelete deletes the workflow; its runs stay as history.
	WorkflowDelete(ctx context.Context, id int64) error

	// WorkflowRunInsert stores r and sets its ID.
	WorkflowRunInsert(ctx context.Context, r *WorkflowRun) error
	WorkflowRunGet(ctx context.Context, id int64) (*WorkflowRun, error)
	// WorkflowRunLock returns the run with its row locked until the transaction ends: every
	// advance of one run is serialised on it, so two nodes ending at once cannot both miss
	// (or both start) the node that waits for them.
	WorkflowRunLock(ctx context.Context, id int64) (*WorkflowRun, error)
	// WorkflowRunList lists the runs of a workflow (of every workflow for 0), newest first,
	// below beforeID when it is not 0.
	WorkflowRunList(ctx context.Context, workflowID, beforeID int64, limit int) ([]*WorkflowRun, error)
	// WorkflowRunsOverdue lists up to limit running runs whose DeadlineAt is set and not
	// after now, earliest deadline first.
	WorkflowRunsOverdue(ctx context.Context, now int64, limit int) ([]*WorkflowRun, error)
	// WorkflowRunsRunning counts the workflow's running runs.
	WorkflowRunsRunning(ctx context.Context, workflowID int64) (int, error)
	// WorkflowRunsInState lists up to limit runs of the workflow (of every workflow for 0) in
	// state, oldest first.
	WorkflowRunsInState(ctx context.Context, workflowID int64, state string, limit int) ([]*WorkflowRun, error)
	// WorkflowRunFinish moves a running or queued run to a final state (compare-and-set on
	// either) and reports whether it moved.
	WorkflowRunFinish(ctx context.Context, id int64, state, message string, finishedAt int64) (bool, error)

	// WorkflowRunsDeleteFinishedBefore deletes up to limit runs that ended before before
	// (Unix ms), with their nodes, and returns how many runs it deleted.
	WorkflowRunsDeleteFinishedBefore(ctx context.Context, before int64, limit int) (int64, error)
	// WorkflowRunReopen moves an ended run from state from back to running, clearing its
	// message and end, with a new deadline (0 for none): a compare-and-set that reports
	// whether it moved.
	WorkflowRunReopen(ctx context.Context, id int64, from string, deadlineAt int64) (bool, error)
	// WorkflowNodesDelete deletes node states of the run (ids of other runs are left), so
	// the run judges those nodes again as pending.
	WorkflowNodesDelete(ctx context.Context, runID int64, ids []int64) error

	// WorkflowNodesInsert inserts node states and sets their IDs; a (RunID, Node) already
	// stored fails the call with ErrAlreadyExists.
	WorkflowNodesInsert(ctx context.Context, ns []*WorkflowNode) error
	// WorkflowNodes lists the node states of a run, by id.
	WorkflowNodes(ctx context.Context, runID int64) ([]*WorkflowNode, error)
	// WorkflowNodesGet returns those of the node states ids that exist.
	WorkflowNodesGet(ctx context.Context, ids []int64) ([]*WorkflowNode, error)
	// WorkflowNodeUpdate moves a node state from state from to n's State, ExecutionID,
	// Result, Message and UpdatedAt (a compare-and-set) and reports whether it moved.
	WorkflowNodeUpdate(ctx context.Context, n *WorkflowNode, from string) (bool, error)

	// AuditInsert appends e to the audit log and sets its ID; At is set from the database's
	// clock when 0.
	AuditInsert(ctx context.Context, e *AuditEntry) error
	// AuditList lists entries newest first.
	AuditList(ctx context.Context, f AuditFilter) ([]*AuditEntry, error)
	// AuditDeleteBefore deletes up to limit entries older than before, oldest first, and
	// returns how many it deleted.
	AuditDeleteBefore(ctx context.Context, before int64, limit int) (int64, error)
}

// Store is a database: a Querier that runs each call on its own, and the source of
// transactions.
type Store interface {
	Querier
	// Begin starts a transaction. On SQLite it takes the database's write lock at once, so
	// a transaction never fails half-way to upgrade its lock.
	Begin(ctx context.Context) (Tx, error)
	Close() error
}

// Tx is a Querier whose calls share one transaction.
type Tx interface {
	Querier
	Commit() error
	// Rollback is a no-op after Commit, so it can be deferred.
	Rollback() error
}

// PauseAllGroups is the group name TriggersPause records when everything is paused.
const PauseAllGroups = "*"

// TriggerSelector selects triggers to pause or resume. Exactly one field must be set.
type TriggerSelector struct {
	TriggerID int64
	JobID     int64
	Group     string
	All       bool
}

// JobFilter selects jobs for JobList.
type JobFilter struct {
	Group string // empty for all groups
	App   string // empty for jobs of every app and none
	// NameContains keeps jobs whose name contains it, NamePrefix those whose name starts
	// with it, both ignoring ASCII case.
	NameContains string
	NamePrefix   string
	Handler      string
	// ParamsSecret keeps the jobs whose params are secret.
	ParamsSecret bool
	// TriggerState keeps jobs with at least one trigger in that state (paused: jobs someone
	// paused).
	TriggerState TriggerState
	// Paused keeps the paused jobs: a trigger paused and none waiting, so the job will not
	// fire until someone resumes it.
	Paused bool
	// Failing keeps the jobs whose last ended execution failed, timed out or was lost: the
	// jobs an operator has to look at now, not every job that ever failed once.
	Failing bool
	// Scope, when not nil, keeps the jobs a reader of these apps may see (Readable).
	Scope   []string
	AfterID int64
	Limit   int // <= 0 for the implementation's default
}

// Readable reports whether a reader whose scope is these apps (nil: every app) may see what
// belongs to app: one of its apps, or no app at all (jobs run on the scheduler's own nodes),
// which every reader may see. The lists' Scope filters keep what it allows.
func Readable(scope []string, app string) bool {
	return scope == nil || app == "" || slices.Contains(scope, app)
}

// ErrOutOfScope is the refusal of what belongs to an app outside the reader's scope, in the
// API and the console alike.
var ErrOutOfScope = errors.New("this is outside your scope of apps")

// JobStates are the words job lists filter by (JobFilter.WithState), in the API, the CLI and
// the console alike.
var JobStates = []string{"enabled", "paused", "failing", "complete", "error"}

// WithState sets f for one of JobStates: enabled (a trigger waits to fire), paused (Paused),
// failing (Failing), or a trigger complete or in error. It reports false for another word.
func (f *JobFilter) WithState(state string) bool {
	switch state {
	case "enabled":
		f.TriggerState = TriggerWaiting
	case "paused":
		f.Paused = true
	case "failing":
		f.Failing = true
	case "complete", "error":
		f.TriggerState = TriggerState(state)
	default:
		return false
	}
	return true
}

// TriggerFilter selects triggers for TriggerList.
type TriggerFilter struct {
	JobID int64 // 0 for all jobs
	// JobIDs, when not empty, keeps the triggers of these jobs: one statement for a page of
	// jobs (at most a few hundred ids).
	JobIDs  []int64
	Group   string // empty for all groups
	State   TriggerState
	AfterID int64
	Limit   int
	// ByNextFire lists by next fire time (then id) instead of by id, ignoring AfterID: the
	// next fires across jobs, with State waiting.
	ByNextFire bool
	// Scope, when not nil, keeps the triggers of the jobs a reader of these apps may see.
	Scope []string
	// WithZoneRows lists the zone rows of triggers of several zones too (Trigger.ZoneOf);
	// without it a list holds the triggers the API shows. ZoneOf, when not 0, keeps the zone
	// rows of that trigger alone.
	WithZoneRows bool
	ZoneOf       int64
}

// ExecutionFilter selects executions for ExecutionList.
type ExecutionFilter struct {
	JobID int64
	// App keeps the executions of the app's jobs; empty for all.
	App string
	// Scope, when not nil, keeps the executions of the jobs a reader of these apps may see.
	Scope []string
	State ExecutionState
	// Cause keeps the executions of one cause (manual, retry, ...); empty for all.
	Cause ExecutionCause
	// ExecutorAddress keeps the executions sent to the executor at that address.
	ExecutorAddress string
	// AlarmState keeps the executions whose alarm is in this state (AlarmSending: claimed
	// for delivery and not recorded yet, or left so by a node that died); empty for all.
	AlarmState AlarmState
	// FiredFrom and FiredTo bound FiredAt (inclusive, exclusive); 0 for no bound. With
	// either, the list holds fired executions only, ordered by FiredAt, then ID.
	FiredFrom int64
	FiredTo   int64
	// AfterID is the last ID seen: with Desc the list continues below it, else above it
	// (in the list's order, so with a fired range after its FiredAt, then ID). A fired
	// range's list after an execution no longer stored is refused with a schedule.FieldError
	// naming "after".
	AfterID int64
	// Desc lists the newest first.
	Desc  bool
	Limit int
}

// TriggerFireUpdate is how a fire advanced one trigger.
type TriggerFireUpdate struct {
	ID         int64
	NextFireAt int64
	PrevFireAt int64
	TimesFired int64
	State      TriggerState
	// Spec and StartAt replace the stored ones when non-zero (a misfire policy may rewrite
	// them).
	Spec    string
	StartAt int64
	// ErrorMessage is stored with State TriggerError.
	ErrorMessage string
}

// ExecutionResult is the outcome of a running execution.
type ExecutionResult struct {
	ID         int64
	State      ExecutionState
	HandleCode int
	HandleMsg  string
	// StartedAt is stored when non-zero (the executor's report of when the handler began).
	StartedAt  int64
	FinishedAt int64
	// Data replaces the execution's data snapshot when non-nil.
	Data map[string]any
	// AlarmState replaces the alarm state when non-empty (AlarmPending for a failure that
	// must be reported).
	AlarmState AlarmState
	// OutputLost counts the output lines the executor could not deliver.
	OutputLost int64
}
