package maintenance

import (
	"context"
	"log/slog"
	"sync"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/startstop"
)

// Manager runs the leader's services while the node leads: it listens to the node's
// leadership, starts every service when a leadership term begins and stops them all when it
// ends, and when the Manager itself stops. A term it did not see begin (the lease lost and
// won again before it read the change) restarts the services: another node may have led in
// between. A service that cannot start ends the term: the Manager stops the others and asks
// the node to resign, so the cluster does not keep a leader that runs only part of its duties.
type Manager struct {
	startstop.Base
	leadership *engine.Leadership
	log        *slog.Logger

	mu       sync.Mutex
	services []Service
	leading  bool
	term     uint64    // the term the services run for, while leading
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
	defer m.lead(ctx, engine.Transition{})
	for {
		select {
		case <-ctx.Done():
			return
		case tr := <-sub.C():
			m.lead(ctx, tr)
		}
	}
}

// lead starts or stops the services for the node's role.
func (m *Manager) lead(ctx context.Context, tr engine.Transition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr.Leader == m.leading && (!tr.Leader || tr.Term == m.term) {
		return
	}
	if m.leading {
		m.log.Info("leadership term over: stopping the leader's duties", "term", m.term)
		m.stop(m.services)
		m.leading = false
	}
	if tr.Leader {
		m.log.Info("leading: starting the leader's duties", "term", tr.Term, "services", len(m.services))
		m.leading, m.term = true, tr.Term
		for i, s := range m.services {
			if err := s.Start(ctx); err != nil {
				m.log.Error("a leader duty did not start: resigning leadership", "term", tr.Term, "err", err)
				m.stop(m.services[:i])
				m.leading = false
				m.leadership.Resign(tr.Term)
				break
			}
		}
	}
	if m.changed != nil {
		m.changed <- m.leading
	}
}

// stop stops the services side by side and waits for them all.
func (m *Manager) stop(services []Service) {
	var wg sync.WaitGroup
	for _, s := range services {
		wg.Add(1)
		go func() { defer wg.Done(); s.Stop() }()
	}
	wg.Wait()
}
