package server

import (
	"context"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// Ops are the operations of the service layer (endpoint.go) that the API's routes and the
// console share. Each is authorized by its Execute, for the principal in the context.
type Ops struct {
	ListJobs  *Endpoint[JobQuery, JobPage]
	GetJob    *Endpoint[JobRef, JobDetail]
	CreateJob *Endpoint[api.JobRequest, api.Job]
	UpdateJob *Endpoint[JobChange, api.Job]
	DeleteJob *Endpoint[JobRef, struct{}]
	PauseJob  *Endpoint[JobRef, api.Job]
	ResumeJob *Endpoint[JobRef, api.Job]
	RunJob    *Endpoint[JobRun, store.Execution]
}

// Ops returns the service layer's operations, for the console.
func (s *Server) Ops() *Ops { return s.ops }

func (s *Server) newOps() *Ops {
	byJob := func(ctx context.Context, in *JobRef) (target, error) { return s.jobIDTarget(ctx, in.ID) }
	return &Ops{
		ListJobs:  endpoint(s, ActRead, nil, s.listJobs),
		GetJob:    endpoint(s, ActRead, byJob, s.getJob),
		CreateJob: endpoint(s, ActOperate, newJob, s.createJob),
		UpdateJob: endpoint(s, ActOperate, s.editJob, s.updateJob),
		DeleteJob: endpoint(s, ActOperate, byJob, s.deleteJob),
		PauseJob:  endpoint(s, ActOperate, byJob, s.pauseJob),
		ResumeJob: endpoint(s, ActOperate, byJob, s.resumeJob),
		RunJob: endpoint(s, ActOperate, func(ctx context.Context, in *JobRun) (target, error) {
			return s.jobIDTarget(ctx, in.ID)
		}, s.runJob),
	}
}
