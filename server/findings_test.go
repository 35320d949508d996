package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
)

// TestServeCutsSlowBody: the server as `sundial server` runs it (Serve, not a test
// listener) drops a client that sends its headers and dribbles its body, at the read
// timeout: the probe held a connection open 35 s+ this way.
func TestServeCutsSlowBody(t *testing.T) {
	srv, err := New(Config{Store: openStore(t, "sqlite"), Logger: slog.New(slog.DiscardHandler),
		HTTP: httpserve.Limits{ReadTimeout: 300 * time.Millisecond}, Scheduler: sundial.Config{}})
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
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: 100000\r\n\r\n{\"user"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a slow body's connection open for %v", time.Since(start))
	}
}

// TestLoginHashingCap: password checks beyond LoginLimits.Hashing wait for a free slot (a
// flood of logins cannot take every core), and a caller that gives up stops waiting.
func TestLoginHashingCap(t *testing.T) {
	l := newLoginLimiter(LoginLimits{Hashing: 1}.withDefaults(), time.Now, prometheus.NewRegistry())
	release := make(chan struct{})
	first := make(chan struct{})
	go func() {
		_ = l.hash(context.Background(), func() { close(first); <-release })
	}()
	<-first
	ran := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := l.hash(ctx, func() { close(ran) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second check while the one slot is busy: %v, want it to wait until its context ends", err)
	}
	select {
	case <-ran:
		t.Fatal("a second password check ran beside the first with Hashing 1")
	default:
	}
	close(release)
	if err := l.hash(context.Background(), func() {}); err != nil {
		t.Fatalf("after the slot freed: %v", err)
	}
}
