package testdb

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxy is a TCP proxy between the nodes and the database (toxiproxy, in this process), for
// partitions and latency: the chaos suite's and every test's that needs a database made
// unreachable.
type Proxy struct {
	p *toxiproxy.Proxy
}

// NewProxy starts a proxy on a free loopback port that forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "db", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("testdb: start proxy to %s: %w", upstream, err)
	}
	return &Proxy{p: p}, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.p.Listen }

// Cut partitions the database from its clients: both directions drop every byte, on open
// connections and new ones alike, and nothing is closed, as when a network path fails.
func (p *Proxy) Cut() error {
	for _, dir := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"cut_%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, dir, dir)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("testdb: cut %s: %w", dir, err)
		}
	}
	return nil
}

// Heal ends a cut. The connections that lived through it are closed (their bytes were
// dropped, so their sessions cannot go on); new ones go through.
func (p *Proxy) Heal() error {
	for _, dir := range []string{"upstream", "downstream"} {
		if err := p.p.Toxics.RemoveToxic(context.Background(), "cut_"+dir); err != nil {
			return fmt.Errorf("testdb: heal %s: %w", dir, err)
		}
	}
	return nil
}

// Hold partitions the database from its clients as a network path that fails for less time
// than TCP takes to give up: every byte each way is held, on open connections and new ones,
// and nothing is closed. Release delivers what was held, in order, and ends the partition: a
// statement sent during it runs when it heals.
func (p *Proxy) Hold() error {
	for _, dir := range []string{"upstream", "downstream"} {
		// A latency longer than any test ends the toxic's delivery only when it is removed,
		// and toxiproxy hands on what a removed latency toxic holds.
		js := fmt.Sprintf(`{"name":"hold_%s","type":"latency","stream":%q,"attributes":{"latency":%d}}`, dir, dir, time.Hour.Milliseconds())
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("testdb: hold %s: %w", dir, err)
		}
	}
	return nil
}

// Release ends a Hold, delivering what it held.
func (p *Proxy) Release() error {
	for _, dir := range []string{"upstream", "downstream"} {
		if err := p.p.Toxics.RemoveToxic(context.Background(), "hold_"+dir); err != nil {
			return fmt.Errorf("testdb: release %s: %w", dir, err)
		}
	}
	return nil
}

// Latency delays every chunk each way by d ± jitter (in ms); 0 removes it.
func (p *Proxy) Latency(ms, jitterMs int) error {
	for _, dir := range []string{"upstream", "downstream"} {
		name := "latency_" + dir
		if p.p.Toxics.GetToxic(name) != nil {
			if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
				return err
			}
		}
		if ms == 0 {
			continue
		}
		js := fmt.Sprintf(`{"name":%q,"type":"latency","stream":%q,"attributes":{"latency":%d,"jitter":%d}}`, name, dir, ms, jitterMs)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("testdb: latency %s: %w", dir, err)
		}
	}
	return nil
}

// Refuse stops the proxy: open connections are closed and new ones refused, until Accept.
func (p *Proxy) Refuse() { p.p.Stop() }

// Accept starts a stopped proxy again on the same address.
func (p *Proxy) Accept() error { return p.p.Start() }

// Close stops the proxy for good.
func (p *Proxy) Close() { p.p.Stop() }

// Proxied returns the DSN of a fresh database of the dialect (postgres or mysql) reached
// through a new Proxy, closed when t ends.
func Proxied(t testing.TB, dialect string) (string, *Proxy) {
	t.Helper()
	dsn := DSN(t, dialect)
	var hostport string
	switch dialect {
	case "postgres":
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		hostport = u.Host
	case "mysql":
		_, rest, _ := strings.Cut(dsn, "tcp(")
		hostport, _, _ = strings.Cut(rest, ")")
	default:
		t.Fatalf("testdb: no proxy for dialect %q", dialect)
	}
	p, err := NewProxy(hostport)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return strings.Replace(dsn, hostport, p.Addr(), 1), p
}

// WithParam adds the query parameter kv ("name=value") to a PostgreSQL or MySQL DSN.
func WithParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
