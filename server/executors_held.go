package server

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// dispatchSlack is how long a /run may take after its dispatch is recorded (the dispatcher's
// SendWindow): a run handed to an executor is not held until it accepted it.
const dispatchSlack = dispatch.SendWindow

// heldGrace is how long a run handed to an executor instance may go unreported by that
// instance's heartbeats before it is lost: as long as an instance may be silent, plus the
// time a /run may take.
func (s *Server) heldGrace() time.Duration {
	return dispatch.LiveIntervals*s.cfg.ExecutorHeartbeat + dispatchSlack
}

// checkHeld declares lost the runs on the beating executor's address that it does not hold:
// at once those handed to an earlier instance (the executor restarted), after heldGrace the
// rest. Executors that send no instance are not checked.
func (s *Server) checkHeld(ctx context.Context, in wire.Registration) error {
	out, err := s.sched.Engine().CheckExecutorBeat(ctx, engine.ExecutorBeat{App: in.App, Address: in.Address,
		Instance: in.Instance, Held: in.Held}, s.heldGrace())
	if err != nil {
		return fmt.Errorf("check the runs of executor %s of %s: %w", in.Address, in.App, err)
	}
	if out.Alarmed > 0 {
		s.alarms.Wake()
	}
	if out.Lost > 0 {
		s.log.Warn("executor no longer holds runs handed to it", "app", in.App, "address", in.Address,
			"instance", in.Instance, "lost", out.Lost, "retried", out.FollowUp)
	}
	return nil
}
