package sundial

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
)

// Execution is what a handler knows about the fire it runs.
type Execution struct {
	ID          int64
	JobID       int64
	TriggerID   int64 // 0 for a fire no trigger caused (TriggerNow, retry of one, child)
	ScheduledAt time.Time
	FiredAt     time.Time
	// Attempt counts from 0; a retry has Attempt > 0.
	Attempt int
	// Cause is why it fired: schedule, manual, retry, misfire, recovery, child.
	Cause  string
	Params string
	// Data is the job's data map, a copy private to this run. When the job persists data, the
	// map as the handler leaves it is stored after a successful run.
	Data map[string]any
}

type executionKey struct{}
type loggerKey struct{}

// ExecutionFrom returns the execution a handler's context carries, or nil outside a handler.
func ExecutionFrom(ctx context.Context) *Execution {
	ex, _ := ctx.Value(executionKey{}).(*Execution)
	return ex
}

// Logger returns a logger whose lines are stored with the handler's execution (its output);
// outside a handler it returns slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// localDispatcher runs fires with the handlers registered in this process.
type localDispatcher struct{ s *Scheduler }

func (d localDispatcher) Dispatch(ctx context.Context, f *engine.Fire) engine.Result {
	d.s.mu.RLock()
	h, ok := d.s.handlers[f.Job.Handler]
	d.s.mu.RUnlock()
	if !ok {
		return engine.Result{Err: fmt.Errorf("no handler %q is registered on this node", f.Job.Handler)}
	}
	ex := f.Execution
	run := &Execution{
		ID: ex.ID, JobID: ex.JobID, TriggerID: ex.TriggerID, ScheduledAt: time.UnixMilli(ex.ScheduledAt),
		FiredAt: time.UnixMilli(ex.FiredAt), Attempt: ex.Attempt, Cause: string(ex.Cause),
		Params: f.Job.Params, Data: maps.Clone(f.Job.Data),
	}
	if run.Data == nil {
		run.Data = map[string]any{}
	}
	out := &outputHandler{lines: new(outputLines)}
	ctx = context.WithValue(ctx, executionKey{}, run)
	ctx = context.WithValue(ctx, loggerKey{}, slog.New(out))
	err := h(ctx)
	res := engine.Result{Err: err, Logs: out.lines.take()}
	if f.Job.PersistData {
		res.Data = run.Data
	}
	return res
}

// outputLines collects a run's log lines; a handler may log from several goroutines.
type outputLines struct {
	mu    sync.Mutex
	lines []string
}

func (o *outputLines) add(s string) {
	o.mu.Lock()
	o.lines = append(o.lines, s)
	o.mu.Unlock()
}

func (o *outputLines) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lines
}

// outputHandler is a slog.Handler that formats records as "LEVEL message key=value ...".
type outputHandler struct {
	lines *outputLines
	attrs []slog.Attr
	group string
}

func (h *outputHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *outputHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		b.WriteByte(' ')
		if h.group != "" {
			b.WriteString(h.group + ".")
		}
		fmt.Fprintf(&b, "%s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.lines.add(b.String())
	return nil
}

func (h *outputHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &outputHandler{lines: h.lines, attrs: append(append([]slog.Attr{}, h.attrs...), as...), group: h.group}
}

func (h *outputHandler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &outputHandler{lines: h.lines, attrs: h.attrs, group: g}
}
