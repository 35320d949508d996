package httpserve

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// CertFile serves a certificate and key from files and reloads them when either file
// changes, so a renewed certificate (certbot, cert-manager) is used without a restart.
type CertFile struct {
	certPath, keyPath string

	mu       sync.Mutex
	cert     *tls.Certificate
	certMod  time.Time
	keyMod   time.Time
	checked  time.Time
	interval time.Duration
}

// LoadCertFile loads the pair once, so that a bad file fails the start and not the first
// handshake.
func LoadCertFile(certPath, keyPath string) (*CertFile, error) {
	if certPath == "" || keyPath == "" {
		return nil, fmt.Errorf("TLS needs both a certificate and a key file (got %q and %q)", certPath, keyPath)
	}
	c := &CertFile{certPath: certPath, keyPath: keyPath, interval: time.Second}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func modTime(path string) (time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// reload reads the pair if a file's modification time moved. Called with mu held (or
// before the CertFile is shared).
func (c *CertFile) reload() error {
	cm, err := modTime(c.certPath)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	km, err := modTime(c.keyPath)
	if err != nil {
		return fmt.Errorf("TLS key: %w", err)
	}
	if c.cert != nil && cm.Equal(c.certMod) && km.Equal(c.keyMod) {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(c.certPath, c.keyPath)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", c.certPath, c.keyPath, err)
	}
	c.cert, c.certMod, c.keyMod = &pair, cm, km
	return nil
}

// GetCertificate is tls.Config's hook. It looks at the files at most once a second; while
// a renewal is half written (a certificate that does not match its key) the last good pair
// is kept.
func (c *CertFile) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checked) >= c.interval {
		c.checked = now
		_ = c.reload() // keep serving the last good pair
	}
	return c.cert, nil
}

// GetClientCertificate is tls.Config's hook on the client side: the pair presented as a
// client certificate (mutual TLS), reloaded as GetCertificate does.
func (c *CertFile) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return c.GetCertificate(nil)
}

// LoadCAFile reads the PEM certificates of path into a pool: the certificate authorities a
// peer's certificate must chain to.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("TLS CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("TLS CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// ClientCerts makes hs, served over TLS (NewServer with certificates), ask each client for a
// certificate and verify one given against pool. With require, a client without one fails
// the handshake; without, the handler decides by the request's verified chains (a server
// whose port also serves people, who have no certificate).
func ClientCerts(hs *http.Server, pool *x509.CertPool, require bool) {
	if hs.TLSConfig == nil || pool == nil {
		return
	}
	hs.TLSConfig.ClientCAs = pool
	hs.TLSConfig.ClientAuth = tls.VerifyClientCertIfGiven
	if require {
		hs.TLSConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
}

// VerifiedClient reports whether r came with a client certificate that verified (see
// ClientCerts).
func VerifiedClient(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.VerifiedChains) > 0
}

// Client returns an HTTP client with the given timeout that keeps up to 64 idle connections
// per host, verifies servers' certificates against roots (nil: the system's) and presents
// cert when a server asks for a client certificate (nil: none).
func Client(timeout time.Duration, roots *x509.CertPool, cert *CertFile) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	if roots != nil || cert != nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
		if cert != nil {
			t.TLSClientConfig.GetClientCertificate = cert.GetClientCertificate
		}
	}
	return &http.Client{Timeout: timeout, Transport: t}
}
