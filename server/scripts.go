package server

import (
	"net/http"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

func toScriptVersionOut(v *store.ScriptVersion) api.ScriptVersion {
	return api.ScriptVersion{Version: v.Version, Script: v.Script, Note: v.Note, CreatedAt: api.Time(v.CreatedAt)}
}

// listScriptVersions lists the kept versions of a job's script, newest first; the store keeps
// at most store.ScriptVersionsKept, so the list is one page.
func (s *Server) listScriptVersions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := s.store.JobGet(r.Context(), id); err != nil {
		return err
	}
	vs, err := s.store.ScriptVersionList(r.Context(), id)
	if err != nil {
		return err
	}
	out := api.Page[api.ScriptVersion]{Items: make([]api.ScriptVersion, len(vs))}
	for i, v := range vs {
		out.Items[i] = toScriptVersionOut(v)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getScriptVersion(w http.ResponseWriter, r *http.Request) error {
	id, version, err := scriptVersionPath(r)
	if err != nil {
		return err
	}
	v, err := s.store.ScriptVersionGet(r.Context(), id, version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toScriptVersionOut(v))
	return nil
}

// restoreScriptVersion makes a kept version the job's script, recorded as a new version.
func (s *Server) restoreScriptVersion(w http.ResponseWriter, r *http.Request) error {
	id, version, err := scriptVersionPath(r)
	if err != nil {
		return err
	}
	v, err := s.sched.RestoreScript(r.Context(), id, version)
	if err != nil {
		return err
	}
	s.log.Info("script restored", "job", id, "from", version, "version", v.Version, "by", principalFrom(r.Context()).User.Name)
	writeJSON(w, http.StatusOK, toScriptVersionOut(v))
	return nil
}

func scriptVersionPath(r *http.Request) (jobID, version int64, err error) {
	if jobID, err = pathID(r, "id"); err != nil {
		return 0, 0, err
	}
	if version, err = pathID(r, "version"); err != nil {
		return 0, 0, err
	}
	return jobID, version, nil
}

// scriptOf is the job of the path's {id} whose script a restore changes: like an edit, it
// needs the scripts permission for a script job.
func scriptOf(s *Server, r *http.Request) (target, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return target{}, err
	}
	return jobTarget(r.Context(), s.store, id)
}
