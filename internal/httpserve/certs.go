package httpserve

import (
	"crypto/tls"
	"fmt"
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
