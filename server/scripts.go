package server

import (
	"context"
	"net/http"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

func toScriptVersionOut(v *store.ScriptVersion) api.ScriptVersion {
	return api.ScriptVersion{Version: v.Version, Script: v.Script, Note: v.Note, CreatedAt: api.Time(v.CreatedAt)}
}

// ScriptVersionRef names a kept version of job JobID's script.
type ScriptVersionRef struct {
	JobID   int64 `json:"-"`
	Version int64 `json:"-"`
}

// listScriptVersions lists the kept versions of a job's script, newest first; the store keeps
// at most store.ScriptVersionsKept, so the list is one page.
func (s *Server) listScriptVersions(ctx context.Context, in *JobRef) (*[]*store.ScriptVersion, error) {
	if _, err := s.store.JobGet(ctx, in.ID); err != nil {
		return nil, err
	}
	vs, err := s.store.ScriptVersionList(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &vs, nil
}

func (s *Server) getScriptVersion(ctx context.Context, in *ScriptVersionRef) (*store.ScriptVersion, error) {
	return s.store.ScriptVersionGet(ctx, in.JobID, in.Version)
}

// restoreScriptVersion makes a kept version the job's script, recorded as a new version.
func (s *Server) restoreScriptVersion(ctx context.Context, in *ScriptVersionRef) (*store.ScriptVersion, error) {
	v, err := s.sched.RestoreScript(ctx, in.JobID, in.Version)
	if err != nil {
		return nil, err
	}
	s.log.Info("script restored", "job", in.JobID, "from", in.Version, "version", v.Version, "by", principalFrom(ctx).User.Name)
	return v, nil
}

// The scripts' HTTP binding.

func readScriptVersionRef(r *http.Request, in *ScriptVersionRef) (err error) {
	if in.JobID, err = pathID(r, "id"); err != nil {
		return err
	}
	in.Version, err = pathID(r, "version")
	return err
}

func writeScriptVersions(w http.ResponseWriter, _ *http.Request, vs *[]*store.ScriptVersion) error {
	out := api.Page[api.ScriptVersion]{Items: make([]api.ScriptVersion, len(*vs))}
	for i, v := range *vs {
		out.Items[i] = toScriptVersionOut(v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
