// Package maintenance owns the leader's duties: the work one node does for the whole cluster
// while it holds the leader lease — recovering dead nodes, sweeping silent executors,
// refreshing the daily reports, deleting old executions, and (through alarm.Sender, which
// keeps the same contract) delivering alarms. Each duty is a Service; a Manager starts them
// when the node becomes leader and stops them when it stops leading or the node stops, on the
// engine's leadership subscription. The job policy the duties apply (what follows a lost run)
// is the engine's; the services only decide when to ask for it. Every service reads time
// through the injected clock.Clock.
package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/startstop"
)

// Service is a background duty with one lifecycle: Start returns once the service runs (a
// running service ignores it); Stop ends it and waits until it has ended, is idempotent, may
// be called on a service never started, and is bounded: services do their I/O on the context
// Stop cancels.
type Service interface {
	Start(ctx context.Context) error
	Stop()
}

// Periodic is a Service that runs one duty at once when started and then every interval on
// its clock, or sooner when woken. A failed run is logged; the next one comes as planned.
type Periodic struct {
	startstop.Base
	name     string
	interval time.Duration
	clock    clock.Clock
	log      *slog.Logger
	run      func(ctx context.Context) error
	wake     chan struct{}
	began    chan struct{} // tests: one send per run about to start (nil outside tests)
	ran      chan struct{} // tests: one send per finished run (nil outside tests)
}

// NewPeriodic returns a stopped periodic service named name (for the logs).
func NewPeriodic(name string, interval time.Duration, clk clock.Clock, log *slog.Logger, run func(ctx context.Context) error) *Periodic {
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Periodic{name: name, interval: interval, clock: clk, log: log.With("duty", name), run: run, wake: make(chan struct{}, 1)}
}

// Start starts the duty's loop.
func (p *Periodic) Start(ctx context.Context) error {
	p.StartFunc(ctx, p.loop)
	return nil
}

// Wake makes the duty run now rather than at its next tick (if it runs).
func (p *Periodic) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Periodic) loop(ctx context.Context) {
	t := p.clock.NewTimer(p.interval)
	defer t.Stop()
	for {
		if p.began != nil {
			p.began <- struct{}{}
		}
		if err := p.run(ctx); err != nil && ctx.Err() == nil {
			p.log.Error("leader duty failed", "err", err)
		}
		if p.ran != nil {
			p.ran <- struct{}{}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-p.wake:
			t.Stop()
		}
		t.Reset(p.interval)
	}
}
