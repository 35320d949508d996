package maintenance

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/startstop"
)

// Manager runs the leader's services while the node leads: it listens to the node's
// leadership, starts every service when the node becomes leader and stops them all when it
// stops leading, and when the Manager itself stops.
type Manager struct {
	startstop.Base
	leadership *engine.Leadership
	log        *slog.Logger

	mu       sync.Mutex
	services []Service
	leading  bool
	changed  chan bool // tests: every role the services were moved to (nil outside tests)
}

// NewManager returns a stopped manager of services on the node's leadership.
func NewManager(leadership *engine.Leadership, log *slog.Logger, services ...Service) *Manager {
	if log == nil {
		log = slog.Default()
	}
	return &Manager{leadership: leadership, log: log, services: services}
}

// Add adds services; call it before Start.
func (m *Manager) Add(services ...Service) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services = append(m.services, services...)
}

// Start subscribes to the node's leadership and returns; the services start when the node
// leads (at once if it does already).
func (m *Manager) Start(ctx context.Context) error {
	sub := m.leadership.Listen()
	if !m.StartFunc(ctx, func(ctx context.Context) { m.loop(ctx, sub) }) {
		sub.Stop()
	}
	return nil
}

func (m *Manager) loop(ctx context.Context, sub *engine.Subscription) {
	defer sub.Stop()
	defer m.lead(ctx, false)
	for {
		select {
		case <-ctx.Done():
			return
		case tr := <-sub.C():
			m.lead(ctx, tr.Leader)
		}
	}
}

// lead starts or stops the services for the node's role.
func (m *Manager) lead(ctx context.Context, leader bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if leader == m.leading {
		return
	}
	m.leading = leader
	if leader {
		m.log.Info("leading: starting the leader's duties", "services", len(m.services))
		for _, s := range m.services {
			if err := s.Start(ctx); err != nil {
				m.log.Error("start a leader duty", "err", err)
			}
		}
	} else {
		m.log.Info("not leading: stopping the leader's duties")
		var wg sync.WaitGroup
		for _, s := range m.services {
			wg.Add(1)
			go func() { defer wg.Done(); s.Stop() }()
		}
		wg.Wait()
	}
	if m.changed != nil {
		m.changed <- leader
	}
}
