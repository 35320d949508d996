package sundial

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// App is an executor group: the executors that run the remote jobs naming it.
type App struct {
	// Name is what jobs name (Job.App) and what executors register under.
	Name  string
	Title string
	// AddressMode is store.AddressAuto (the default: the executors that register) or
	// store.AddressManual (Addresses).
	AddressMode store.AddressMode
	// Addresses are the base URLs (http://host:port) of a manual app's executors.
	Addresses []string
	// Protocol is the wire protocol its executors speak: store.ProtocolSundial (the default)
	// or store.ProtocolXXLJob, whose ProtocolVersion is the XXL-JOB generation.
	Protocol        string
	ProtocolVersion string
}

// PutApp creates or replaces an app, checked as AppRow checks it, and returns it as stored.
func (s *Scheduler) PutApp(ctx context.Context, a App) (*store.App, error) {
	var row *store.App
	err := store.InTx(ctx, s.store, func(q store.Querier) (err error) {
		row, err = s.PutAppTx(ctx, q, a)
		return err
	})
	return row, err
}

// PutAppTx is PutApp inside the caller's transaction.
func (s *Scheduler) PutAppTx(ctx context.Context, q store.Querier, a App) (*store.App, error) {
	row, err := AppRow(a)
	if err != nil {
		return nil, err
	}
	// An xxl-job app's token is set by its own call; replacing the app keeps it.
	cur, err := q.AppGet(ctx, a.Name)
	switch {
	case err == nil:
		row.XXLTokenHash, row.XXLTokenSealed = cur.XXLTokenHash, cur.XXLTokenSealed
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	if err := q.AppPut(ctx, row); err != nil {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	return row, nil
}

// AppRow validates a and returns the row PutApp stores: every caller that makes apps (the
// REST API, the console, an import) checks them here. A server's own limits on addresses
// (--executor-networks) are the server's to add.
func AppRow(a App) (*store.App, error) {
	bad := func(field, format string, args ...any) (*store.App, error) {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, schedule.Fieldf(field, format, args...))
	}
	if a.Name == "" || len(a.Name) > 190 {
		return bad("name", "want 1 to 190 characters, got %d", len(a.Name))
	}
	mode := a.AddressMode
	switch mode {
	case "":
		mode = store.AddressAuto
	case store.AddressAuto, store.AddressManual:
	default:
		return bad("address_mode", "want auto or manual, got %q", a.AddressMode)
	}
	if mode == store.AddressManual && len(a.Addresses) == 0 {
		return bad("addresses", "an app in manual mode needs at least one address")
	}
	for i, addr := range a.Addresses {
		if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
			return bad(fmt.Sprintf("addresses[%d]", i), "want an executor's base URL (http://host:port), got %q", addr)
		}
	}
	return &store.App{Name: a.Name, Title: a.Title, AddressMode: mode, Addresses: slices.Clone(a.Addresses),
		Protocol: a.Protocol, ProtocolVersion: a.ProtocolVersion}, nil
}
