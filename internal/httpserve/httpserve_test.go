package httpserve

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serve runs h with limits l on a real socket until the test ends.
func serve(t *testing.T, h http.Handler, l Limits, certs *CertFile) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := NewServer(h, l, certs, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(hs, ln, l)
	}()
	t.Cleanup(func() {
		hs.Close()
		<-done
	})
	return ln.Addr().String()
}

// closedWithin reads from conn until the server closes it, failing if that takes longer
// than limit (far above the timeouts under test, so only a missing timeout trips it).
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %v", limit)
	}
}

// TestSlowBodyCutOff: a client that sends its headers and then dribbles the body loses the
// connection at the read timeout (it held one 35 s+ before).
func TestSlowBodyCutOff(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}), Limits{ReadTimeout: 300 * time.Millisecond}, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nab"); err != nil {
		t.Fatal(err)
	}
	closedWithin(t, conn, 10*time.Second)
}

// TestIdleKeepAliveClosed: a keep-alive connection that asks nothing more is closed at the
// idle timeout (40 s+ before).
func TestIdleKeepAliveClosed(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		Limits{IdleTimeout: 300 * time.Millisecond}, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	resp.Body.Close()
	closedWithin(t, conn, 10*time.Second)
}

// TestConnectionCap: past MaxConns a new connection is not served until one closes.
func TestConnectionCap(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}), Limits{MaxConns: 1}, nil)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		resp, err := c.Get("http://" + addr + "/first")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	second := make(chan error, 1)
	go func() {
		resp, err := c.Get("http://" + addr + "/second")
		if err == nil {
			resp.Body.Close()
		}
		second <- err
	}()
	select {
	case <-entered:
		t.Fatal("a second connection was served beside the first with MaxConns 1")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatalf("second request after the first ended: %v", err)
	}
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 with the given name.
func writeCert(t *testing.T, dir, cn string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestCertificateReloaded: a renewed certificate is served without a restart.
func TestCertificateReloaded(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := writeCert(t, dir, "first")
	certs, err := LoadCertFile(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	certs.interval = 0 // look at the files on every handshake
	addr := serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Limits{}, certs)
	served := func() string {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}
	writeCert(t, dir, "second")
	// The rewrite may fall in the same mtime tick as the first write on coarse clocks.
	later := time.Now().Add(time.Minute)
	for _, p := range []string{certPath, keyPath} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if cn := served(); cn != "second" {
		t.Fatalf("served %q after the renewal, want second", cn)
	}
}

func TestParseProxies(t *testing.T) {
	ps, err := ParseProxies("10.0.0.0/8, 192.168.1.5")
	if err != nil || len(ps) != 2 {
		t.Fatalf("%v %v", ps, err)
	}
	for addr, want := range map[string]bool{"10.1.2.3:5": true, "192.168.1.5:80": true, "192.168.1.6:80": false, "[::ffff:10.0.0.1]:1": true} {
		r := &http.Request{RemoteAddr: addr, Header: http.Header{"X-Forwarded-Proto": {"https"}}}
		if got := ps.Secure(r); got != want {
			t.Errorf("Secure from %s = %v, want %v", addr, got, want)
		}
	}
	if _, err := ParseProxies("nonsense"); err == nil {
		t.Error("ParseProxies(nonsense) succeeded")
	}
}

// TestStreamOutlivesWriteTimeout: a streaming answer that lifts its write deadline keeps
// writing past the server's write timeout; one that does not is cut off.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	for _, lift := range []bool{true, false} {
		addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if lift {
				NoWriteDeadline(w)
			}
			_, _ = io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			<-time.After(3 * timeout) // a stream's next event comes later than the timeout
			_, _ = io.WriteString(w, "second\n")
		}), Limits{WriteTimeout: timeout}, nil)
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := string(b) == "first\nsecond\n"; got != lift {
			t.Fatalf("lifted %v: got %q", lift, b)
		}
	}
}
