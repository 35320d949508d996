package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/store"
)

// errKilled is the cause a killed in-process run's context is canceled with.
var errKilled = errors.New("killed")

// Kill stops the in-process run x (running on any node). On its own node the handler's
// context is canceled at once; for another node's run a kill request is recorded in the
// database, which that node reads every PollInterval while it runs handlers. The run then
// ends canceled through the usual result path. It reports whether this node canceled it
// itself.
func (e *Engine) Kill(ctx context.Context, x *store.Execution) (bool, error) {
	if x.State != store.ExecRunning || x.ExecutorAddress != "" {
		return false, &StateError{Msg: fmt.Sprintf("execution %d is %s and not running in process", x.ID, x.State)}
	}
	if x.Node == e.cfg.NodeID {
		e.lifeMu.Lock()
		l := e.life
		e.lifeMu.Unlock()
		if l != nil && l.conc.cancelRun(x.ID, errKilled) {
			e.stats.Killed.Add(1)
			return true, nil
		}
	}
	if err := e.store.KillRequest(ctx, x.ID, x.Node); err != nil {
		return false, err
	}
	return false, nil
}

// killLoop takes the kill requests addressed to this node while it runs handlers: one read
// of a table that is almost always empty, every PollInterval, and none at all while idle.
func (e *Engine) killLoop(l *lifecycle) {
	for e.sleep(l.ctx, e.cfg.PollInterval, nil) {
		if !l.conc.anyRunning() {
			continue
		}
		ids, err := e.store.KillRequestsTake(l.ctx, e.cfg.NodeID)
		if err != nil {
			if l.ctx.Err() == nil {
				e.log.Error("reading kill requests", "err", err)
			}
			continue
		}
		for _, id := range ids {
			if l.conc.cancelRun(id, errKilled) {
				e.stats.Killed.Add(1)
				e.log.Info("execution killed on request", "execution", id)
			}
		}
	}
}

// cancelRun cancels the started run id with cause; it reports whether it found one.
func (c *concurrency) cancelRun(id int64, cause error) bool { return c.t.Cancel(id, cause) }

// anyRunning reports whether a run has started and not finished.
func (c *concurrency) anyRunning() bool { return c.t.Busy() }
