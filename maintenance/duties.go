package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store"
)

// NodeRecovery hands the work of dead nodes back to the cluster every heartbeat interval
// (engine.RecoverDeadNodes).
func NodeRecovery(e *engine.Engine, clk clock.Clock, log *slog.Logger) *Periodic {
	return NewPeriodic("node recovery", e.HeartbeatInterval(), clk, log, e.RecoverDeadNodes)
}

// WorkflowTimeouts fails the workflow runs whose timeout has elapsed every heartbeat
// interval (engine.TimeOutWorkflows).
func WorkflowTimeouts(e *engine.Engine, clk clock.Clock, log *slog.Logger) *Periodic {
	return NewPeriodic("workflow timeouts", e.HeartbeatInterval(), clk, log, func(ctx context.Context) error {
		_, err := e.TimeOutWorkflows(ctx)
		return err
	})
}

// ExecutorSweep forgets the executor instances silent for three heartbeat intervals and has
// the engine declare their running executions lost (engine.LoseOnExecutor), every heartbeat
// interval, once this node has reached the database for three intervals without a break. When a loss is final and alarmed, alarmed is called (to wake the alarm delivery).
func ExecutorSweep(e *engine.Engine, st store.Store, heartbeat time.Duration, alarmed func(), clk clock.Clock, log *slog.Logger) *Periodic {
	if log == nil {
		log = slog.Default()
	}
	return NewPeriodic("executor sweep", heartbeat, clk, log, func(ctx context.Context) error {
		// Executors beat through the nodes: after an outage of the database (or of this
		// node's way to it) they are silent in the registry without being gone, and get
		// three beats to show it before their runs are declared lost.
		if !e.SeesDatabaseFor(3 * heartbeat) {
			return nil
		}
		gone, err := st.RegistrySweep(ctx, 3*heartbeat)
		if err != nil {
			return fmt.Errorf("sweep the executor registry: %w", err)
		}
		for _, in := range gone {
			out, err := e.LoseOnExecutor(ctx, in.App, in.Address)
			if err != nil {
				return err
			}
			if out.Alarmed > 0 && alarmed != nil {
				alarmed()
			}
			log.Warn("executor went silent", "app", in.App, "address", in.Address, "lost", out.Lost, "retried", out.FollowUp)
		}
		return nil
	})
}

// Reports recomputes today's and yesterday's daily report rows every interval
// (RefreshReports).
func Reports(st store.Store, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	return NewPeriodic("daily reports", interval, clk, log, func(ctx context.Context) error {
		return RefreshReports(ctx, st)
	})
}

// DayLayout is how report days are named.
const DayLayout = "2006-01-02"

// RefreshReports recomputes today's and yesterday's report rows (UTC days by the database
// clock): yesterday's still changes while its late fires finish. Older days stay as they
// were last computed, so retention does not empty the dashboard's history.
func RefreshReports(ctx context.Context, st store.Store) error {
	now, err := st.DBNow(ctx)
	if err != nil {
		return err
	}
	today := time.UnixMilli(now).UTC()
	for _, d := range []time.Time{today.AddDate(0, 0, -1), today} {
		if _, err := st.ReportsRefresh(ctx, d.Format(DayLayout)); err != nil {
			return fmt.Errorf("refresh the report of %s: %w", d.Format(DayLayout), err)
		}
	}
	return nil
}

// RetentionInterval is how often the leader deletes old executions; retentionBatch is how
// many one statement deletes, so no delete holds its locks for long.
const (
	RetentionInterval = 10 * time.Minute
	retentionBatch    = 1000
)

// Retention deletes the finished executions fired more than retention ago, every interval.
func Retention(st store.Store, retention, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	return retentionDuty("retention", DeleteOld, st, retention, interval, clk, log)
}

// DeleteOld deletes the finished executions (with their output) fired before the instant,
// and the workflow runs (with their nodes' states) that ended before it, in batches, and
// returns how many executions it deleted.
func DeleteOld(ctx context.Context, st store.Store, before time.Time, log *slog.Logger) (int64, error) {
	n, err := deleteInBatches(ctx, st.ExecutionsDeleteFiredBefore, before, "executions", log)
	if err != nil {
		return n, err
	}
	_, err = deleteInBatches(ctx, st.WorkflowRunsDeleteFinishedBefore, before, "workflow runs", log)
	return n, err
}

// AuditRetention deletes the audit entries older than retention, every interval. It is apart
// from the executions' Retention: an audit trail is usually kept far longer than run history.
func AuditRetention(st store.Store, retention, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	return retentionDuty("audit retention", DeleteOldAudit, st, retention, interval, clk, log)
}

// DeleteOldAudit deletes the audit entries made before the instant, in batches, and returns
// how many it deleted.
func DeleteOldAudit(ctx context.Context, st store.Store, before time.Time, log *slog.Logger) (int64, error) {
	return deleteInBatches(ctx, st.AuditDeleteBefore, before, "audit entries", log)
}

// retentionDuty runs del every interval for what is older than retention.
func retentionDuty(name string, del func(context.Context, store.Store, time.Time, *slog.Logger) (int64, error),
	st store.Store, retention, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return NewPeriodic(name, interval, clk, log, func(ctx context.Context) error {
		_, err := del(ctx, st, clk.Now().Add(-retention), log)
		return err
	})
}

// deleteInBatches calls del until it deletes less than a batch, so no delete holds its locks
// for long, and returns the total.
func deleteInBatches(ctx context.Context, del func(context.Context, int64, int) (int64, error), before time.Time,
	what string, log *slog.Logger) (int64, error) {
	var total int64
	for {
		n, err := del(ctx, before.UnixMilli(), retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			if total > 0 {
				log.Info("deleted old "+what, "count", total, "before", before)
			}
			return total, err
		}
	}
}
