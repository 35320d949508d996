package server

import (
	"context"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// Ops are the operations of the service layer (endpoint.go) that the API's routes and the
// console share. Each is authorized by its Execute, for the principal in the context.
type Ops struct {
	Info *Endpoint[struct{}, api.Info]

	Me             *Endpoint[struct{}, api.User]
	ChangePassword *Endpoint[api.PasswordRequest, struct{}]

	ListJobs  *Endpoint[JobQuery, JobPage]
	GetJob    *Endpoint[JobRef, JobDetail]
	CreateJob *Endpoint[api.JobRequest, api.Job]
	UpdateJob *Endpoint[JobChange, api.Job]
	DeleteJob *Endpoint[JobDelete, struct{}]
	PauseJob  *Endpoint[JobRef, api.Job]
	ResumeJob *Endpoint[JobRef, api.Job]
	RunJob    *Endpoint[JobRun, store.Execution]
	JobNames  *Endpoint[JobNamesQuery, map[int64]string]
	CheckJob  *Endpoint[JobCheck, []FieldWarning]

	ListJobTriggers *Endpoint[JobTriggers, TriggerPage]
	AddTrigger      *Endpoint[TriggerAdd, api.Trigger]
	GetTrigger      *Endpoint[TriggerRef, store.Trigger]
	DeleteTrigger   *Endpoint[TriggerRef, store.Trigger]
	PauseTrigger    *Endpoint[TriggerRef, store.Trigger]
	UpdateTrigger   *Endpoint[TriggerPolicyUpdate, store.Trigger]
	ResumeTrigger   *Endpoint[TriggerRef, store.Trigger]
	TriggerNext     *Endpoint[TriggerNextQuery, api.TriggerNext]
	NextFires       *Endpoint[NextFiresQuery, TriggerPage]

	CreateBackfill *Endpoint[BackfillAdd, api.Backfill]
	ListBackfills  *Endpoint[JobRef, []api.Backfill]
	GetBackfill    *Endpoint[BackfillRef, api.Backfill]
	CancelBackfill *Endpoint[BackfillRef, api.Backfill]

	ListScriptVersions   *Endpoint[JobRef, []*store.ScriptVersion]
	GetScriptVersion     *Endpoint[ScriptVersionRef, store.ScriptVersion]
	RestoreScriptVersion *Endpoint[ScriptVersionRef, store.ScriptVersion]

	ListExecutions    *Endpoint[ExecutionQuery, ExecutionPage]
	GetExecution      *Endpoint[ExecutionRef, store.Execution]
	ExecutionOutput   *Endpoint[OutputQuery, OutputPage]
	ExecutionAttempts *Endpoint[ExecutionRef, []*store.Execution]
	KillExecution     *Endpoint[ExecutionRef, store.Execution]
	RetryExecution    *Endpoint[ExecutionRef, store.Execution]
	// A map/reduce run's sub-tasks, read by whoever may read the run.
	ListSubtasks *Endpoint[SubtaskQuery, SubtaskPage]

	ListApps  *Endpoint[AllOf, []api.App]
	GetApp    *Endpoint[AppRef, api.App]
	PutApp    *Endpoint[AppPut, api.App]
	DeleteApp *Endpoint[AppRef, struct{}]
	// An app's executor credential; the secret is in the answer that makes it, only.
	ListCredentials  *Endpoint[AppRef, []api.AppCredential]
	CreateCredential *Endpoint[AppRef, api.AppCredential]
	RotateCredential *Endpoint[AppRef, api.AppCredential]
	RevokeCredential *Endpoint[AppRef, struct{}]
	ListExecutors    *Endpoint[AllOf, []api.Executor]
	ListNodes        *Endpoint[AllOf, []api.Node]
	NodeHealth       *Endpoint[struct{}, NodeHealth]

	ListCalendars   *Endpoint[CalendarQuery, CalendarPage]
	GetCalendar     *Endpoint[CalendarRef, store.Calendar]
	PutCalendar     *Endpoint[CalendarPut, store.Calendar]
	DeleteCalendar  *Endpoint[CalendarRef, struct{}]
	ResolveCalendar *Endpoint[CalendarIn, Resolved]

	ListWorkflows     *Endpoint[WorkflowQuery, WorkflowPage]
	GetWorkflow       *Endpoint[WorkflowRef, store.Workflow]
	CreateWorkflow    *Endpoint[api.WorkflowRequest, store.Workflow]
	RunWorkflow       *Endpoint[WorkflowRunStart, WorkflowRunOut]
	ListWorkflowRuns  *Endpoint[WorkflowRunQuery, WorkflowRunPage]
	GetWorkflowRun    *Endpoint[WorkflowRunRef, WorkflowRunOut]
	CancelWorkflowRun *Endpoint[WorkflowRunRef, WorkflowRunOut]
	UpdateWorkflow    *Endpoint[WorkflowChange, store.Workflow]
	DeleteWorkflow    *Endpoint[WorkflowRef, struct{}]
	RetryWorkflowRun  *Endpoint[WorkflowRunRef, WorkflowRunOut]
	RetryWorkflowNode *Endpoint[WorkflowNodeRef, WorkflowRunOut]
	MarkWorkflowNode  *Endpoint[WorkflowNodeMark, WorkflowRunOut]
	BackfillWorkflow  *Endpoint[WorkflowBackfillAdd, api.Backfill]

	ListUsers     *Endpoint[UserQuery, api.Page[api.User]]
	CreateUser    *Endpoint[api.UserRequest, api.User]
	GetUser       *Endpoint[UserRef, api.User]
	UpdateUser    *Endpoint[UserChange, api.User]
	ResetPassword *Endpoint[UserRef, api.PasswordReset]
	RedeemReset   *Endpoint[api.ResetRequest, struct{}]
	ListTokens    *Endpoint[TokenQuery, api.Page[api.Token]]
	CreateToken   *Endpoint[api.TokenRequest, api.Token]
	DeleteToken   *Endpoint[TokenRef, struct{}]
	ListAudit     *Endpoint[AuditQuery, api.Page[api.AuditEntry]]
}

// Ops returns the service layer's operations, for the console.
func (s *Server) Ops() *Ops { return s.ops }

func (s *Server) newOps() *Ops {
	byJob := func(ctx context.Context, in *JobRef) (target, error) { return s.jobIDTarget(ctx, in.ID) }
	byTrigger := func(ctx context.Context, in *TriggerRef) (target, error) { return s.triggerTarget(ctx, in.ID) }
	byBackfill := func(ctx context.Context, in *BackfillRef) (target, error) { return s.backfillTarget(ctx, in.ID) }
	byExecution := func(ctx context.Context, in *ExecutionRef) (target, error) { return s.executionTarget(ctx, in.ID) }
	return &Ops{
		Info:           endpoint(s, ActRead, nil, s.info),
		Me:             endpoint(s, ActSelf, nil, s.me),
		ChangePassword: endpoint(s, ActSelf, nil, s.changePassword),

		ListJobs:  endpoint(s, ActRead, nil, s.listJobs),
		GetJob:    endpoint(s, ActRead, byJob, s.getJob),
		CreateJob: endpoint(s, ActOperate, newJob, s.createJob),
		UpdateJob: endpoint(s, ActOperate, s.editJob, s.updateJob),
		DeleteJob: endpoint(s, ActOperate, func(ctx context.Context, in *JobDelete) (target, error) { return s.jobIDTarget(ctx, in.ID) }, s.deleteJob),
		PauseJob:  endpoint(s, ActOperate, byJob, s.pauseJob),
		ResumeJob: endpoint(s, ActOperate, byJob, s.resumeJob),
		RunJob: endpoint(s, ActOperate, func(ctx context.Context, in *JobRun) (target, error) {
			return s.jobIDTarget(ctx, in.ID)
		}, hidingSecretParams(s, s.runJob)),
		JobNames: endpoint(s, ActRead, nil, s.jobNames),
		CheckJob: endpoint(s, ActRead, nil, s.checkJob),

		ListJobTriggers: endpoint(s, ActRead, func(ctx context.Context, in *JobTriggers) (target, error) {
			return s.jobIDTarget(ctx, in.JobID)
		}, s.listJobTriggers),
		AddTrigger: endpoint(s, ActOperate, func(ctx context.Context, in *TriggerAdd) (target, error) {
			return s.jobIDTarget(ctx, in.JobID)
		}, s.addTrigger),
		GetTrigger:    endpoint(s, ActRead, byTrigger, s.getTrigger),
		DeleteTrigger: endpoint(s, ActOperate, byTrigger, s.deleteTrigger),
		PauseTrigger:  endpoint(s, ActOperate, byTrigger, s.pauseTrigger),
		UpdateTrigger: endpoint(s, ActOperate, func(ctx context.Context, in *TriggerPolicyUpdate) (target, error) {
			return s.triggerTarget(ctx, in.ID)
		}, s.updateTrigger),
		ResumeTrigger: endpoint(s, ActOperate, byTrigger, s.resumeTrigger),
		TriggerNext: endpoint(s, ActRead, func(ctx context.Context, in *TriggerNextQuery) (target, error) {
			return s.triggerTarget(ctx, in.ID)
		}, s.triggerNext),
		NextFires: endpoint(s, ActRead, nil, s.nextFires),

		CreateBackfill: endpoint(s, ActOperate, func(ctx context.Context, in *BackfillAdd) (target, error) {
			return s.jobIDTarget(ctx, in.JobID)
		}, s.createBackfill),
		ListBackfills:  endpoint(s, ActRead, byJob, s.listBackfills),
		GetBackfill:    endpoint(s, ActRead, byBackfill, s.getBackfill),
		CancelBackfill: endpoint(s, ActOperate, byBackfill, s.cancelBackfill),

		ListScriptVersions: endpoint(s, ActRead, byJob, s.listScriptVersions),
		GetScriptVersion: endpoint(s, ActRead, func(ctx context.Context, in *ScriptVersionRef) (target, error) {
			return s.jobIDTarget(ctx, in.JobID)
		}, s.getScriptVersion),
		// A restore changes the script: like an edit, a script job's needs the scripts permission.
		RestoreScriptVersion: endpoint(s, ActOperate, func(ctx context.Context, in *ScriptVersionRef) (target, error) {
			return jobTarget(ctx, s.store, in.JobID)
		}, s.restoreScriptVersion),

		ListExecutions: endpoint(s, ActRead, nil, s.listExecutions),
		GetExecution:   endpoint(s, ActRead, byExecution, hidingSecretParams(s, s.getExecution)),
		ExecutionOutput: endpoint(s, ActRead, func(ctx context.Context, in *OutputQuery) (target, error) {
			return s.executionTarget(ctx, in.ID)
		}, s.executionLines),
		ExecutionAttempts: endpoint(s, ActRead, byExecution, s.attempts),
		KillExecution:     endpoint(s, ActOperate, byExecution, hidingSecretParams(s, s.killExecution)),
		RetryExecution:    endpoint(s, ActOperate, byExecution, hidingSecretParams(s, s.retryExecution)),
		ListSubtasks: endpoint(s, ActRead, func(ctx context.Context, in *SubtaskQuery) (target, error) {
			return s.executionTarget(ctx, in.ID)
		}, s.listSubtasks),

		ListApps: endpoint(s, ActRead, nil, s.listApps),
		GetApp:   endpoint(s, ActRead, nil, s.getApp),
		// Apps and their credentials decide where runs (and their parameters) go and who may
		// report them: an admin's.
		PutApp:           endpoint(s, ActAdmin, nil, s.putApp),
		DeleteApp:        endpoint(s, ActAdmin, nil, s.deleteApp),
		ListCredentials:  endpoint(s, ActAdmin, nil, s.listCredentials),
		CreateCredential: endpoint(s, ActAdmin, nil, s.createCredential),
		RotateCredential: endpoint(s, ActAdmin, nil, s.rotateCredential),
		RevokeCredential: endpoint(s, ActAdmin, nil, s.revokeCredential),
		ListExecutors:    endpoint(s, ActRead, nil, s.listExecutors),
		ListNodes:        endpoint(s, ActRead, nil, s.listNodes),
		NodeHealth:       endpoint(s, ActRead, nil, s.nodeHealth),

		// Calendars belong to no app: every role reads them, an unscoped operator changes them.
		ListCalendars:   endpoint(s, ActRead, nil, s.listCalendars),
		GetCalendar:     endpoint(s, ActRead, nil, s.getCalendar),
		PutCalendar:     endpoint(s, ActOperate, nil, s.putCalendar),
		DeleteCalendar:  endpoint(s, ActOperate, nil, s.deleteCalendar),
		ResolveCalendar: endpoint(s, ActRead, nil, s.resolveCalendar),

		// A workflow belongs to the apps of its jobs: a person acts on it when each is in
		// their scope. The list keeps the workflows the reader may see.
		ListWorkflows: endpoint(s, ActRead, nil, s.listWorkflows),
		GetWorkflow: endpoint(s, ActRead, func(ctx context.Context, in *WorkflowRef) (target, error) {
			return s.byWorkflow(ctx, in.Name)
		}, s.getWorkflow),
		CreateWorkflow: endpoint(s, ActOperate, func(ctx context.Context, in *api.WorkflowRequest) (target, error) {
			return s.graphTarget(ctx, string(in.Graph))
		}, s.createWorkflow),
		RunWorkflow: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowRunStart) (target, error) {
			return s.byWorkflow(ctx, in.Name)
		}, s.runWorkflow),
		ListWorkflowRuns: endpoint(s, ActRead, func(ctx context.Context, in *WorkflowRunQuery) (target, error) {
			return s.byWorkflow(ctx, in.Name)
		}, s.listWorkflowRuns),
		GetWorkflowRun: endpoint(s, ActRead, func(ctx context.Context, in *WorkflowRunRef) (target, error) {
			return s.byWorkflowRun(ctx, in.ID)
		}, s.getWorkflowRun),
		CancelWorkflowRun: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowRunRef) (target, error) {
			return s.byWorkflowRun(ctx, in.ID)
		}, s.cancelWorkflowRun),
		// An edit must be in scope for the workflow's jobs before and after it.
		UpdateWorkflow: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowChange) (target, error) {
			before, err := s.byWorkflow(ctx, in.Name)
			if err != nil {
				return target{}, err
			}
			after, err := s.graphTarget(ctx, string(in.Graph))
			if err != nil {
				return target{}, err
			}
			return target{apps: append(before.apps, after.apps...)}, nil
		}, s.updateWorkflow),
		DeleteWorkflow: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowRef) (target, error) {
			return s.byWorkflow(ctx, in.Name)
		}, s.deleteWorkflow),
		RetryWorkflowRun: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowRunRef) (target, error) {
			return s.byWorkflowRun(ctx, in.ID)
		}, s.retryWorkflowRun),
		RetryWorkflowNode: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowNodeRef) (target, error) {
			return s.byWorkflowRun(ctx, in.ID)
		}, s.retryWorkflowNode),
		MarkWorkflowNode: endpoint(s, ActOperate, func(ctx context.Context, in *WorkflowNodeMark) (target, error) {
			return s.byWorkflowRun(ctx, in.ID)
		}, s.markWorkflowNode),
		BackfillWorkflow: endpoint(s, ActOperate, s.workflowBackfillTarget, s.backfillWorkflow),

		ListUsers:     endpoint(s, ActAdmin, nil, s.listUsers),
		CreateUser:    endpoint(s, ActAdmin, nil, s.createUser),
		GetUser:       endpoint(s, ActAdmin, nil, s.getUser),
		UpdateUser:    endpoint(s, ActAdmin, nil, s.updateUser),
		ResetPassword: endpoint(s, ActAdmin, nil, s.resetPassword),
		RedeemReset:   endpoint(s, ActPublic, nil, s.redeemReset),
		// A token is its owner's: everyone manages their own (an admin everyone's).
		ListTokens:  endpoint(s, ActSelf, nil, s.listTokens),
		CreateToken: endpoint(s, ActSelf, nil, s.createToken),
		DeleteToken: endpoint(s, ActSelf, nil, s.deleteToken),

		ListAudit: endpoint(s, ActAdmin, nil, s.listAudit),
	}
}

// NodeHealth is how the answering node keeps up under load: the figures of its metrics
// sundial_fire_late_seconds, sundial_fires_backlog and sundial_heartbeat_age_seconds.
type NodeHealth struct {
	// FireLate is how late the last batch of fires this node started was.
	FireLate time.Duration
	// Backlog counts the fires this node acquired and has not started.
	Backlog int
	// HeartbeatAge is how long ago its last heartbeat that succeeded was sent; -1 with none.
	HeartbeatAge time.Duration
}

func (s *Server) nodeHealth(context.Context, *struct{}) (*NodeHealth, error) {
	e := s.sched.Engine()
	h := NodeHealth{FireLate: time.Duration(e.Stats().LateMs.Load()) * time.Millisecond, Backlog: e.Backlog(), HeartbeatAge: -1}
	if age, ok := e.HeartbeatAge(); ok {
		h.HeartbeatAge = age
	}
	return &h, nil
}
