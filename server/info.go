package server

import (
	"context"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// info says which Sundial this node runs.
func (s *Server) info(context.Context, *struct{}) (*api.Info, error) {
	return &api.Info{Version: version.Version(), GoVersion: version.GoVersion(), NodeID: s.sched.Engine().NodeID()}, nil
}
