// Package httpserve owns how Sundial's two HTTP servers (the API server and the executor's
// endpoint) face the network: timeouts and a connection cap so that slow or idle clients
// cannot hold connections, TLS with certificates reloaded when their files change, the
// trusted-proxy rule that decides whether a request came over TLS, and the security headers
// every answer carries.
package httpserve

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound what one client can hold. Zero fields take the defaults below.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers. Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. Default 30 s: a request
	// body is at most 1 MB.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing an answer; streaming routes lift it for themselves
	// (NoWriteDeadline). Default 60 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request. Default 30 s.
	IdleTimeout time.Duration
	// MaxConns caps the open connections; more wait in the kernel's accept queue.
	// Default 1024; negative means no cap.
	MaxConns int
}

// Defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultMaxConns          = 1024
)

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	return l
}

// NewServer returns an http.Server for h with the limits and, when certs is not nil, TLS
// with its certificates. Serve it with Serve.
func NewServer(h http.Handler, l Limits, certs *CertFile, log *slog.Logger) *http.Server {
	l = l.withDefaults()
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	if log != nil {
		hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	}
	if certs != nil {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	}
	return hs
}

// Serve serves hs on ln with the connection cap of l, over TLS when hs has a TLS
// configuration (NewServer with certificates).
func Serve(hs *http.Server, ln net.Listener, l Limits) error {
	l = l.withDefaults()
	if l.MaxConns > 0 {
		ln = netutil.LimitListener(ln, l.MaxConns)
	}
	if hs.TLSConfig != nil {
		return hs.ServeTLS(ln, "", "")
	}
	return hs.Serve(ln)
}

// NoWriteDeadline lifts the write timeout for the rest of a streaming answer (an output
// follow), which legitimately lasts as long as its run.
func NoWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}

// Proxies are the networks whose X-Forwarded-Proto is believed: a TLS-terminating proxy in
// front of the server says so in that header. Anyone else could claim TLS with it.
type Proxies []netip.Prefix

// ParseProxies reads comma-separated CIDRs or single addresses.
func ParseProxies(s string) (Proxies, error) {
	var ps Proxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: want a CIDR or an address", f)
			}
			ps = append(ps, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: want a CIDR or an address", f)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

// trusted tells whether the request's peer is one of the proxies.
func (ps Proxies) trusted(r *http.Request) bool {
	if len(ps) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Secure tells whether the client reached us over TLS: directly, or through a trusted proxy
// that says so.
func (ps Proxies) Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return ps.trusted(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// ContentSecurityPolicy lets a page load scripts, styles, images and API calls from its own
// origin only: no inline script, no framing, no plugins.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Headers sets the security headers on every answer of next: no MIME sniffing, the
// Content-Security-Policy, no framing, and HSTS when the client is on TLS.
func Headers(ps Proxies, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if ps.Secure(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// NoStore marks an answer that carries a secret (a new token, a session) as never to be
// cached.
func NoStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}
