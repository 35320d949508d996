package server

import (
	"fmt"
	"net/http"
	"strings"

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
	return api.App{Name: a.Name, Title: a.Title, AddressMode: string(a.AddressMode), Addresses: addrs,
		CreatedAt: api.Time(a.CreatedAt), UpdatedAt: api.Time(a.UpdatedAt)}
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) error {
	as, err := s.store.AppList(r.Context())
	if err != nil {
		return err
	}
	out := api.Page[api.App]{Items: make([]api.App, len(as))}
	for i, a := range as {
		out.Items[i] = toAppOut(a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getApp(w http.ResponseWriter, r *http.Request) error {
	a, err := s.store.AppGet(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAppOut(a))
	return nil
}

// putApp creates or replaces an app.
func (s *Server) putApp(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var in api.AppRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	mode := store.AddressMode(in.AddressMode)
	switch mode {
	case "":
		mode = store.AddressAuto
	case store.AddressAuto, store.AddressManual:
	default:
		return invalidField("address_mode", "want auto or manual, got %q", in.AddressMode)
	}
	if mode == store.AddressManual && len(in.Addresses) == 0 {
		return invalidField("addresses", "an app in manual mode needs at least one address")
	}
	for i, a := range in.Addresses {
		if !strings.HasPrefix(a, "http://") && !strings.HasPrefix(a, "https://") {
			return invalidField(fmt.Sprintf("addresses[%d]", i), "want an executor's base URL (http://host:port), got %q", a)
		}
	}
	if name == "" || len(name) > 190 {
		return invalidField("name", "want 1 to 190 characters, got %d", len(name))
	}
	a := &store.App{Name: name, Title: in.Title, AddressMode: mode, Addresses: in.Addresses}
	ctx := s.audited(r, "app.put", "app", name, appSnapshot(name))
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.AppPut(ctx, a) }); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAppOut(a))
	return nil
}

func (s *Server) deleteApp(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	ctx := s.audited(r, "app.delete", "app", name, appSnapshot(name))
	if err := store.InTx(ctx, s.store, func(q store.Querier) error { return q.AppDelete(ctx, name) }); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listExecutors lists the live executor instances, of one app with ?app=.
func (s *Server) listExecutors(w http.ResponseWriter, r *http.Request) error {
	ins, err := s.store.RegistryLive(r.Context(), r.URL.Query().Get("app"), dispatch.LiveIntervals*s.cfg.ExecutorHeartbeat)
	if err != nil {
		return err
	}
	out := api.Page[api.Executor]{Items: make([]api.Executor, len(ins))}
	for i, in := range ins {
		hs := in.Handlers
		if hs == nil {
			hs = []string{}
		}
		out.Items[i] = api.Executor{App: in.App, Address: in.Address, Handlers: hs,
			RegisteredAt: api.Time(in.RegisteredAt), LastSeen: api.Time(in.LastSeen)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
