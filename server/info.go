package server

import (
	"net/http"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// info says which Sundial this node runs.
func (s *Server) info(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, api.Info{Version: version.Version(), GoVersion: version.GoVersion(), NodeID: s.sched.Engine().NodeID()})
	return nil
}
