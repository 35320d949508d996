package executor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

// TestFailover: an executor given two servers registers with the first and, when it stops,
// heartbeats to the second and delivers its results and output there within a heartbeat.
func TestFailover(t *testing.T) {
	first, second := executortest.NewPeer(t, token), executortest.NewPeer(t, token)
	release := make(chan struct{})
	ex, err := executor.New(executor.Config{Servers: []string{first.URL, second.URL}, Token: token, App: "billing",
		Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir(), HeartbeatInterval: 50 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ex.Handle("work", func(ctx context.Context) error {
		executor.Logger(ctx).Info("working")
		<-release
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	if n := len(first.Registrations()); n == 0 {
		t.Fatal("no registration with the first server")
	}
	if resp, err := first.Run(ctx, ex.Address(), wire.RunRequest{ExecutionID: 7, JobID: 1, Handler: "work"}); err != nil || !resp.Accepted {
		t.Fatalf("run: %+v %v", resp, err)
	}
	first.Close()
	// The heartbeats move to the second server and name the run the executor holds.
	second.Wait(t, wait, "a heartbeat holding run 7", func() bool {
		regs := second.Registrations()
		return len(regs) > 0 && slices.Contains(regs[len(regs)-1].Held, 7) && regs[len(regs)-1].Instance == ex.Instance()
	})
	close(release)
	if res := second.WaitResult(t, 7, wait); res.State != wire.StateSucceeded {
		t.Fatalf("result through the second server: %+v", res)
	}
	second.WaitOutput(t, 7, "working", wait)
	// Once delivered, the run is no longer held.
	second.Wait(t, wait, "a heartbeat holding nothing", func() bool {
		regs := second.Registrations()
		return len(regs) > 0 && len(regs[len(regs)-1].Held) == 0
	})
}

// TestInstancePerProcess: every executor process registers with an instance id of its own.
func TestInstancePerProcess(t *testing.T) {
	peer := executortest.NewPeer(t, token)
	a := startOn(t, peer, t.TempDir(), nil)
	b := startOn(t, peer, t.TempDir(), nil)
	if a.ex.Instance() == "" || a.ex.Instance() == b.ex.Instance() {
		t.Fatalf("instances %q and %q: want two different ids", a.ex.Instance(), b.ex.Instance())
	}
	regs := peer.Registrations()
	if regs[0].Instance != a.ex.Instance() {
		t.Fatalf("registration %+v: want instance %q", regs[0], a.ex.Instance())
	}
}

func TestServersConfig(t *testing.T) {
	for _, cfg := range []executor.Config{
		{Token: token, App: "a"},
		{Servers: []string{"http://a:1", "localhost:2"}, Token: token, App: "a"},
	} {
		if _, err := executor.New(cfg); err == nil {
			t.Errorf("New(%+v): want an error", cfg)
		}
	}
	ex, err := executor.New(executor.Config{Server: "http://a:1/", Servers: []string{"http://b:1", "http://a:1"}, Token: token, App: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ex.Servers(); !slices.Equal(got, []string{"http://a:1", "http://b:1"}) {
		t.Fatalf("servers %v: want a then b, once each", got)
	}
}
