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
// the engine declare their running executions lost in the same transaction
// (engine.SweepSilentExecutors), every heartbeat interval, once this node has reached the database for three intervals without a break
// (engine.JudgeSilence). When a loss is final and alarmed, alarmed is called (to wake the alarm delivery).
//
// perInstance tells the addresses that name one executor process (a stream executor's): no
// later process can register one again, so its runs are lost as soon as no registration
// holds it, also when their dispatch was recorded after the sweep forgot the instance (a
// push address, taken again by the executor's next process, is judged by that one's beats).
func ExecutorSweep(e *engine.Engine, st store.Store, heartbeat time.Duration, perInstance func(address string) bool, alarmed func(), clk clock.Clock, log *slog.Logger) *Periodic {
	if log == nil {
		log = slog.Default()
	}
	return NewPeriodic("executor sweep", heartbeat, clk, log, func(ctx context.Context) error {
		// Executors beat through the nodes: after an outage of the database (or of this
		// node's way to it) they are silent in the registry without being gone. They get
		// three beats to show it, and those silent since before this node's view began the
		// outage grace, before their runs are declared lost (the rule of the node recovery).
		j, ok := e.JudgeSilence(3*heartbeat, heartbeat)
		if !ok {
			return nil
		}
		gone, out, err := e.SweepSilentExecutors(ctx, 3*heartbeat, &j)
		if err != nil {
			return err
		}
		if len(gone) > 0 {
			addrs := make([]string, len(gone))
			for i, in := range gone {
				addrs[i] = in.App + " at " + in.Address
			}
			log.Warn("executors went silent", "executors", addrs, "lost", out.Lost, "retried", out.FollowUp)
		}
		if out.Alarmed > 0 && alarmed != nil {
			alarmed()
		}
		var owners []string
		for _, in := range gone {
			if in.Instance != "" {
				owners = append(owners, engine.ExecutorSubtaskOwner(in.Instance))
			}
		}
		// The sub-tasks the silent instances held go back to pending for the app's other
		// executors, and the maps they reduced to waiting; a late result of theirs is refused
		// by the compare-and-set on the owner.
		if n, err := st.SubtasksRelease(ctx, owners); err != nil {
			return fmt.Errorf("release the sub-tasks of silent executors: %w", err)
		} else if n > 0 {
			log.Warn("sub-tasks of silent executors back to pending", "n", n, "owners", owners)
		}
		if err := releaseUnregistered(ctx, st, log); err != nil {
			return err
		}
		if perInstance == nil {
			return nil
		}
		return loseOrphaned(ctx, e, st, perInstance, alarmed, log)
	})
}

// anyAge reads every registration, however silent: one not swept yet is the sweep's to judge.
const anyAge = 100 * 365 * 24 * time.Hour

// releaseUnregistered moves back to pending the sub-tasks held, and the maps reduced, by
// executor instances that no registration names: one the sweep forgot (its release above
// covers only what it held then) or one that claimed without registering. Nothing else
// releases them, and their map would never end. The owners are read before the registry, so
// an instance that registers meanwhile keeps its work.
func releaseUnregistered(ctx context.Context, st store.Store, log *slog.Logger) error {
	owners, err := st.SubtaskOwners(ctx, engine.ExecutorSubtaskOwner(""))
	if err != nil || len(owners) == 0 {
		return err
	}
	live, err := st.RegistryLive(ctx, "", anyAge)
	if err != nil {
		return fmt.Errorf("read the executor registry: %w", err)
	}
	registered := make(map[string]bool, len(live))
	for _, in := range live {
		registered[engine.ExecutorSubtaskOwner(in.Instance)] = true
	}
	var orphans []string
	for _, o := range owners {
		if !registered[o] {
			orphans = append(orphans, o)
		}
	}
	n, err := st.SubtasksRelease(ctx, orphans)
	if err != nil {
		return fmt.Errorf("release the sub-tasks of unregistered executors: %w", err)
	}
	if len(orphans) > 0 {
		log.Warn("sub-tasks of unregistered executor instances back to pending", "n", n, "owners", orphans)
	}
	return nil
}

// loseOrphaned declares lost the running executions handed to a per-instance address that
// no registration holds any more.
func loseOrphaned(ctx context.Context, e *engine.Engine, st store.Store, perInstance func(string) bool, alarmed func(), log *slog.Logger) error {
	running, err := st.ExecutionsRunningByExecutor(ctx, "")
	if err != nil {
		return fmt.Errorf("count the runs handed to executors: %w", err)
	}
	var orphans []store.ExecutorKey
	for k := range running {
		if perInstance(k.Address) {
			orphans = append(orphans, k)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	live, err := st.RegistryLive(ctx, "", anyAge)
	if err != nil {
		return fmt.Errorf("read the executor registry: %w", err)
	}
	held := make(map[store.ExecutorKey]bool, len(live))
	for _, in := range live {
		held[store.ExecutorKey{App: in.App, Address: in.Address}] = true
	}
	for _, k := range orphans {
		if held[k] {
			continue
		}
		out, err := e.LoseOnExecutor(ctx, k.App, k.Address)
		if err != nil {
			return err
		}
		if out.Alarmed > 0 && alarmed != nil {
			alarmed()
		}
		log.Warn("runs handed to an executor no registration holds", "app", k.App, "address", k.Address, "lost", out.Lost, "retried", out.FollowUp)
	}
	return nil
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
// and the workflow runs (with their nodes' states) that ended before it, and returns how many
// executions it deleted: first whole day partitions of the history (PostgreSQL), then what is
// left before the instant (the boundary day, the rows of other databases) in keyset batches,
// paused between on clk (nil: the real clock).
func DeleteOld(ctx context.Context, st store.Store, before time.Time, clk clock.Clock, log *slog.Logger) (int64, error) {
	days, dropped, err := st.HistoryDropPartitions(ctx, before.UnixMilli())
	if len(days) > 0 {
		log.Info("dropped old history partitions", "days", days, "count", dropped, "before", before)
	}
	if err != nil {
		// A partition not dropped now (its lock not granted in time) is dropped at the next
		// run; the batches below still keep the history within its horizon.
		log.Warn("drop old history partitions", "err", err)
	}
	n, err := deleteInBatches(ctx, st.ExecutionsDeleteFiredBefore, before, "executions", clk, log)
	if err != nil {
		return dropped + n, err
	}
	_, err = deleteInBatches(ctx, st.WorkflowRunsDeleteFinishedBefore, before, "workflow runs", clk, log)
	return dropped + n, err
}

// HistoryInterval is how often the leader creates the history's partitions ahead, and
// HistoryAhead how many days ahead: a week of leader outages before fires land in the
// default partition.
const (
	HistoryInterval = time.Hour
	HistoryAhead    = 7
)

// HistoryPartitions creates the history's day partitions from today to HistoryAhead days on
// (PostgreSQL; a no-op elsewhere), every interval.
func HistoryPartitions(st store.Store, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return NewPeriodic("history partitions", interval, clk, log, func(ctx context.Context) error {
		days, err := st.HistoryPartitionsEnsure(ctx, clk.Now().UnixMilli(), HistoryAhead)
		if len(days) > 0 {
			log.Info("created history partitions", "days", days)
		}
		return err
	})
}

// AuditRetention deletes the audit entries older than retention, every interval. It is apart
// from the executions' Retention: an audit trail is usually kept far longer than run history.
func AuditRetention(st store.Store, retention, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	return retentionDuty("audit retention", DeleteOldAudit, st, retention, interval, clk, log)
}

// DeleteOldAudit deletes the audit entries made before the instant, in batches, and returns
// how many it deleted.
func DeleteOldAudit(ctx context.Context, st store.Store, before time.Time, clk clock.Clock, log *slog.Logger) (int64, error) {
	return deleteInBatches(ctx, st.AuditDeleteBefore, before, "audit entries", clk, log)
}

// retentionDuty runs del every interval for what is older than retention.
func retentionDuty(name string, del func(context.Context, store.Store, time.Time, clock.Clock, *slog.Logger) (int64, error),
	st store.Store, retention, interval time.Duration, clk clock.Clock, log *slog.Logger) *Periodic {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return NewPeriodic(name, interval, clk, log, func(ctx context.Context) error {
		_, err := del(ctx, st, clk.Now().Add(-retention), clk, log)
		return err
	})
}

// retentionYield is how many times as long as a full batch took retention waits before the
// next: a day of batches on a database with one writer (SQLite) otherwise holds its write
// lock back to back and the fires wait on it (bench history on SQLite, 1M rows: firing fell by
// more than half while a day was deleted).
const retentionYield = 4

// deleteInBatches calls del until it deletes less than a batch, so no delete holds its locks
// for long, pausing between full batches (retentionYield), and returns the total.
func deleteInBatches(ctx context.Context, del func(context.Context, int64, int) (int64, error), before time.Time,
	what string, clk clock.Clock, log *slog.Logger) (int64, error) {
	if clk == nil {
		clk = clock.Real{}
	}
	var total int64
	for {
		t0 := clk.Now()
		n, err := del(ctx, before.UnixMilli(), retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			if total > 0 {
				log.Info("deleted old "+what, "count", total, "before", before)
			}
			return total, err
		}
		pause := clk.NewTimer(retentionYield * clk.Now().Sub(t0))
		select {
		case <-pause.C():
		case <-ctx.Done():
			pause.Stop()
			return total, ctx.Err()
		}
	}
}
