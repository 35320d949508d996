package executor_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
)

// TestExecutorCutsSlowBody: the executor's own server drops a client that sends its headers
// and dribbles a /run body, at its read timeout, as the scheduler's server does.
func TestExecutorCutsSlowBody(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	ex, err := executor.New(executor.Config{Server: peer.URL, Token: token, App: "billing", Transport: executor.TransportPush, Listen: "127.0.0.1:0",
		SpoolDir: t.TempDir(), Logger: testLogger(t), HTTP: httpserve.Limits{ReadTimeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = ex.Stop(ctx)
	})
	u, err := url.Parse(ex.Address())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"exec"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the executor kept a slow body's connection open for 10 s")
	}
}
