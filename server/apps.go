package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/store"
)

// Apps (executor groups) and their live executor instances, for people.

func toAppOut(a *store.App) api.App {
	addrs := a.Addresses
	if addrs == nil {
		addrs = []string{}
	}
	protocol := a.Protocol
	if protocol == "" {
		protocol = store.ProtocolSundial
	}
	return api.App{Name: a.Name, Title: a.Title, AddressMode: string(a.AddressMode), Addresses: addrs,
		Protocol: protocol, ProtocolVersion: a.ProtocolVersion, XXLAccessTokenSet: a.XXLTokenHash != "",
		CreatedAt: api.Time(a.CreatedAt), UpdatedAt: api.Time(a.UpdatedAt)}
}

// AllOf asks for a whole short list (apps, nodes, executors: one row per process or group,
// not per fire), of one app when App is set where the list has apps; the API's binding pages it.
type AllOf struct {
	App string `json:"app"`
}

func (s *Server) listApps(ctx context.Context, _ *AllOf) (*[]api.App, error) {
	as, err := s.store.AppList(ctx)
	if err != nil {
		return nil, err
	}
	out := api.Page[api.App]{Items: make([]api.App, len(as))}
	stored := map[string]bool{}
	for i, a := range as {
		out.Items[i] = toAppOut(a)
		stored[a.Name] = true
		warning, err := sundial.ClearSecretsWarning(ctx, s.store, a)
		if err != nil {
			return nil, err
		}
		if warning != "" {
			out.Items[i].Warnings = []string{warning}
		}
	}
	// An app is also made by the first executor that registers for it (auto mode) without a
	// row of its own: it is listed like the others while an executor of it is live.
	live, err := s.liveExecutors(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, in := range live {
		if !stored[in.App] {
			stored[in.App] = true
			out.Items = append(out.Items, registeredApp(in.App, live))
		}
	}
	return &out.Items, nil
}

// registeredApp is an app only its registered executors made: auto mode, known since its
// first live executor registered.
func registeredApp(name string, live []*store.Instance) api.App {
	a := api.App{Name: name, AddressMode: string(store.AddressAuto), Addresses: []string{}, Protocol: store.ProtocolSundial}
	for _, in := range live {
		if in.App == name && (a.CreatedAt == 0 || api.Time(in.RegisteredAt) < a.CreatedAt) {
			a.CreatedAt, a.UpdatedAt = api.Time(in.RegisteredAt), api.Time(in.RegisteredAt)
		}
	}
	return a
}

func (s *Server) liveExecutors(ctx context.Context, app string) ([]*store.Instance, error) {
	return s.store.RegistryLive(ctx, app, dispatch.LiveIntervals*s.cfg.ExecutorHeartbeat)
}

// AppRef names an app.
type AppRef struct {
	Name string `json:"name"`
}

// AppPut creates or replaces app Name.
type AppPut struct {
	Name string `json:"name"`
	api.AppRequest
}

// getApp is an app, or one only its live executors made.
func (s *Server) getApp(ctx context.Context, in *AppRef) (*api.App, error) {
	a, err := s.store.AppGet(ctx, in.Name)
	if errors.Is(err, store.ErrNotFound) {
		live, lerr := s.liveExecutors(ctx, in.Name)
		if lerr != nil {
			return nil, lerr
		}
		if len(live) > 0 {
			out := registeredApp(in.Name, live)
			return &out, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return s.appOut(ctx, a)
}

// appOut is app a and its warnings.
func (s *Server) appOut(ctx context.Context, a *store.App) (*api.App, error) {
	out := toAppOut(a)
	var err error
	if out.Warnings, err = s.clearSecrets(ctx, a.Name); err != nil {
		return nil, err
	}
	return &out, nil
}

// clearSecrets is the warning of sundial.ClearSecretsWarning about app (none for "").
func (s *Server) clearSecrets(ctx context.Context, app string) ([]string, error) {
	if app == "" {
		return nil, nil
	}
	a, err := s.store.AppGet(ctx, app)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	warning, err := sundial.ClearSecretsWarning(ctx, s.store, a)
	if warning == "" || err != nil {
		return nil, err
	}
	return []string{warning}, nil
}

// putApp creates or replaces an app.
func (s *Server) putApp(ctx context.Context, in *AppPut) (*api.App, error) {
	name := in.Name
	// The server's own limit on addresses; the scheduler checks the rest (sundial.AppRow).
	for i, a := range in.Addresses {
		if err := s.allowedAddress(a); err != nil {
			return nil, invalidField(fmt.Sprintf("addresses[%d]", i), "%v", err)
		}
	}
	actx := s.auditedCtx(ctx, "app.put", "app", name, appSnapshot(name))
	sa := sundial.App{Name: name, Title: in.Title, AddressMode: store.AddressMode(in.AddressMode), Addresses: in.Addresses,
		Protocol: in.Protocol, ProtocolVersion: in.ProtocolVersion}
	if err := s.appProtocol(actx, &sa, in.XXLAccessToken); err != nil {
		return nil, err
	}
	a, err := s.sched.PutApp(actx, sa)
	if err != nil {
		return nil, err
	}
	return s.appOut(ctx, a)
}

// deleteApp deletes an app with its executor credential (store.AppDelete): its executors
// can no longer register it back.
func (s *Server) deleteApp(ctx context.Context, in *AppRef) (*struct{}, error) {
	name := in.Name
	actx := s.auditedCtx(ctx, "app.delete", "app", name, appSnapshot(name))
	if err := store.InTx(actx, s.store, func(q store.Querier) error { return q.AppDelete(actx, name) }); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}

// The apps' HTTP binding.

func readAppRef(r *http.Request, in *AppRef) error {
	in.Name = r.PathValue("name")
	return nil
}

func readAppPut(r *http.Request, in *AppPut) error {
	in.Name = r.PathValue("name")
	return decodeOp(r, &in.AppRequest)
}

// listExecutors lists the live executor instances, of one app with ?app=, with the runs
// each has now. The cursor is the app (path-escaped) and the address: the order listed.
func (s *Server) listExecutors(ctx context.Context, in *AllOf) (*[]api.Executor, error) {
	app := in.App
	ins, err := s.liveExecutors(ctx, app)
	if err != nil {
		return nil, err
	}
	running, err := s.store.ExecutionsRunningByExecutor(ctx, app)
	if err != nil {
		return nil, err
	}
	items := make([]api.Executor, len(ins))
	for i, in := range ins {
		hs := in.Handlers
		if hs == nil {
			hs = []string{}
		}
		items[i] = api.Executor{App: in.App, Address: in.Address, Instance: in.Instance, Version: in.Version, Handlers: hs,
			RegisteredAt: api.Time(in.RegisteredAt), LastSeen: api.Time(in.LastSeen),
			Running: running[store.ExecutorKey{App: in.App, Address: in.Address}]}
	}
	return &items, nil
}

// allowedAddress checks a manual executor address against --executor-networks: the server
// sends runs (with their parameters) to these addresses, so with the list set only an IP
// literal inside it is taken. A host name is refused, since it may resolve anywhere later.
func (s *Server) allowedAddress(addr string) error {
	if len(s.cfg.ExecutorNetworks) == 0 {
		return nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("%q is no URL: %w", addr, err)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return fmt.Errorf("%q: with --executor-networks set, the host must be an IP address", addr)
	}
	for _, n := range s.cfg.ExecutorNetworks {
		if n.Contains(ip.Unmap()) {
			return nil
		}
	}
	return fmt.Errorf("%q is outside the executor networks (--executor-networks)", addr)
}

// appProtocol sets the app's protocol, generation and (for xxl-job) access token from the
// request: a token given is checked and stored as its hash and sealed (see docs/security.md);
// none given keeps the app's current one, and an xxl-job app without any is refused.
func (s *Server) appProtocol(ctx context.Context, a *sundial.App, token string) error {
	protocol, _, err := sundial.AppProtocol(a.Protocol, a.ProtocolVersion)
	if err != nil {
		return err
	}
	if protocol != store.ProtocolXXLJob {
		if token != "" {
			return invalidField("xxl_access_token", "only an xxl-job app has an access token")
		}
		return nil
	}
	if token == "" {
		// None given: the app keeps the one it has (sundial.PutAppTx), if it has one.
		prev, err := s.store.AppGet(ctx, a.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && prev.Protocol == store.ProtocolXXLJob && prev.XXLTokenSealed != "" {
			return nil
		}
	}
	if err := sundial.CheckXXLToken(token); err != nil {
		return err
	}
	if s.secrets.Primary() == "" {
		return &apiError{Status: http.StatusConflict, Code: "failed_precondition",
			Message: "an xxl-job app's access token is presented to its executors, so the server must keep it: start the server with --secret-key (it is stored sealed with it)"}
	}
	sealed, err := s.secrets.SealFor(token, a.Name)
	if err != nil {
		return fmt.Errorf("app %q: seal the access token: %w", a.Name, err)
	}
	a.XXLTokenHash, a.XXLTokenSealed = hashSecret(token), sealed
	return nil
}
