package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/internal/teststore"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
	dir  string
}

func newTestCA(t *testing.T) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sundial executor CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{t: t, cert: cert, key: key, pool: pool, dir: t.TempDir()}
}

// issue makes a certificate for 127.0.0.1, good for serving and as a client certificate,
// written to files and loaded as the server and executor load theirs.
func (ca *testCA) issue(name string, serial int64) *httpserve.CertFile {
	t := ca.t
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := httpserve.LoadCertFile(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMutualTLS runs the executor channel with mutual TLS over real sockets: an executor
// without a client certificate is refused at the server's executor routes (401, counted)
// even with the right token; the SDK executor with its certificate registers, and the
// server's signed call reaches it over TLS with the server's client certificate; a caller
// without a certificate cannot even complete a handshake with the executor.
func TestMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	serverCert, executorCert := ca.issue("server", 2), ca.issue("executor", 3)
	st := teststore.Open(t, "sqlite")
	srv, err := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler), ExecutorToken: execToken,
		TLS: serverCert, ExecutorCA: ca.pool, ExecutorTLS: serverCert})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := "https://" + ln.Addr().String()

	// No client certificate: the right token is not enough.
	noCert := httpserve.Client(10*time.Second, ca.pool, nil)
	req, _ := http.NewRequest(http.MethodPost, base+wire.PathRegister,
		strings.NewReader(`{"app":"billing","address":"https://127.0.0.1:1","instance":"x"}`))
	req.Header.Set("Authorization", "Bearer "+execToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := noCert.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("register without a client certificate: status %d, want 401", resp.StatusCode)
	}
	if n := testutil.ToFloat64(srv.rejected.WithLabelValues(rejectNoClientCert)); n != 1 {
		t.Fatalf("no_client_cert refusals %v, want 1", n)
	}
	// People on the same port need none.
	if resp, err := noCert.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz without a client certificate: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	ex, err := executor.New(executor.Config{Server: base, Token: execToken, App: "billing", Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), TLS: executorCert, TLSCA: ca.pool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if err := ex.Start(sctx); err != nil {
		t.Fatalf("an executor with its certificate: %v", err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	if !strings.HasPrefix(ex.Address(), "https://") {
		t.Fatalf("executor address %s, want https", ex.Address())
	}
	killed, answered, err := srv.remote.Kill(sctx, "billing", ex.Address(), ex.Instance(), 12345)
	if err != nil || killed || answered != ex.Instance() {
		t.Fatalf("the server's call over mutual TLS: killed %v, answered by %q, %v; want an answer from %s", killed, answered, err, ex.Instance())
	}

	// The executor's endpoint requires a client certificate at the handshake.
	if resp, err := noCert.Post(ex.Address()+wire.PathBeat, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("a call to the executor without a client certificate got status %d, want a failed handshake", resp.StatusCode)
	}
	// A certificate from another CA is refused too.
	other := newTestCA(t)
	foreign := httpserve.Client(10*time.Second, ca.pool, other.issue("intruder", 4))
	if resp, err := foreign.Post(ex.Address()+wire.PathBeat, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("a call with another CA's certificate got status %d, want a failed handshake", resp.StatusCode)
	}
}
