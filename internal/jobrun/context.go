package jobrun

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// runKey keys a run of type R in a context; each R has a key of its own.
type runKey[R any] struct{}

type loggerKey struct{}

// WithRun returns ctx carrying run, for RunFrom.
func WithRun[R any](ctx context.Context, run R) context.Context {
	return context.WithValue(ctx, runKey[R]{}, run)
}

// RunFrom returns the run of type R that ctx carries.
func RunFrom[R any](ctx context.Context) (R, bool) {
	r, ok := ctx.Value(runKey[R]{}).(R)
	return r, ok
}

// WithLogger returns ctx carrying the run's logger, for LoggerFrom.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the run's logger that ctx carries.
func LoggerFrom(ctx context.Context) (*slog.Logger, bool) {
	l, ok := ctx.Value(loggerKey{}).(*slog.Logger)
	return l, ok
}

// IdempotencyKey names one fire of a job: its trigger (0 for a fire no trigger caused), its
// scheduled time in Unix milliseconds and its shard. Retries and recovery re-runs of the fire
// share it, so a handler whose side effect must happen once can deduplicate on it.
func IdempotencyKey(job, trigger, scheduledAtMs int64, shard int) string {
	return fmt.Sprintf("j%d-t%d-%d-s%d", job, trigger, scheduledAtMs, shard)
}

// Millis is the instant of a Unix ms time sent with a run, the zero Time for 0 (not sent).
func Millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
