package dispatch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/store"
)

// TestRunForRestartedInstance: the registry still names the executor's previous instance at
// its address (it restarted a moment ago). The executor refuses a run recorded for the old
// instance, and the dispatcher records it for the instance that answered and sends it again:
// the run is handed over, and the server counts it as the new instance's.
func TestRunForRestartedInstance(t *testing.T) {
	ctx := context.Background()
	f := newRemoteFixture(t)
	st, job, exe, peer := f.st, f.job, f.exe, f.peer
	ex := f.running(t, store.Owner{Node: "n"})
	if err := st.RegistryBeat(ctx, "billing", exe.Address(), "the-old-one", "", []string{"once"}); err != nil {
		t.Fatal(err)
	}

	r := NewRemote(Config{Store: st})
	if _, _, _, err := r.addresses(ctx, "billing", "once"); err != nil { // reads the registry, old instance and all
		t.Fatal(err)
	}
	if res := r.send(ctx, ex, job, exe.Address(), 0, 1, nil, ""); !res.Async || res.Err != nil {
		t.Fatalf("dispatch to the restarted executor: %+v, want the run handed over", res)
	}
	runs, err := st.ExecutionsRunningOnExecutor(ctx, "billing", exe.Address())
	if err != nil {
		t.Fatal(err)
	}
	if got := peer.WaitResult(t, ex.ID, 10*time.Second); got.State != wire.StateSucceeded {
		t.Fatalf("result %+v, want succeeded", got)
	}
	if len(runs) != 1 || runs[0].Instance != exe.Instance() {
		t.Fatalf("running on the executor: %+v, want the run recorded for instance %s", runs, exe.Instance())
	}

	// An executor refuses outright a run for another instance.
	resp, err := peer.Run(ctx, exe.Address(), wire.RunRequest{ExecutionID: 99, JobID: 1, Handler: "once", Instance: "the-old-one"})
	if err == nil || resp.Accepted || !strings.Contains(err.Error(), wire.MisdirectedInstance) || !strings.Contains(err.Error(), exe.Instance()) {
		t.Fatalf("run for another instance: %+v %v, want refused naming this instance", resp, err)
	}
}

// recorder keeps the requests a client sends, with their bodies.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rt *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	kept := req.Clone(context.Background())
	kept.Body, kept.GetBody = nil, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, kept)
	rt.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	return http.DefaultTransport.RoundTrip(req)
}

// TestBeatNotReplayable (issue 20, item 10): the dispatcher's beat to an executor whose
// instance it does not know yet (a manual address) is signed for that address; captured on
// the wire and replayed to another executor of the same app, it is refused as misdirected,
// and replayed to its own executor it is refused as a replay. Before the fix the beat was
// signed for no instance and no address, and every executor of the cluster took it once.
func TestBeatNotReplayable(t *testing.T) {
	ctx := context.Background()
	f := newRemoteFixture(t)
	other, err := executor.New(executor.Config{Servers: []string{f.peer.URL}, Token: fixtureToken, App: "billing", Transport: executor.TransportPush, Listen: "127.0.0.1:0", SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop(context.Background()) })

	tap := &recorder{}
	r := NewRemote(Config{Store: f.st, Client: &http.Client{Transport: tap, Timeout: 10 * time.Second}})
	instance, err := r.beatInstance(ctx, "billing", f.exe.Address())
	if err != nil || instance != f.exe.Instance() {
		t.Fatalf("beat: instance %q, %v; want %s", instance, err, f.exe.Instance())
	}
	if len(tap.reqs) != 1 || !strings.Contains(tap.reqs[0].Header.Get(execsign.Header), "instance=,") {
		t.Fatalf("want one beat signed for no instance, got %d requests", len(tap.reqs))
	}
	captured := tap.reqs[0]
	replayed := captured.Clone(ctx)
	replayed.URL, _ = url.Parse(other.Address() + wire.PathBeat)
	replayed.Host = ""
	status, body, err := executortest.Send(replayed)
	if err != nil || status != wire.StatusMisdirected || !strings.Contains(string(body), wire.MisdirectedAddress) {
		t.Fatalf("the beat replayed to another executor: %d %s %v; want %d %s", status, body, err, wire.StatusMisdirected, wire.MisdirectedAddress)
	}
	if status, body, err := executortest.Send(captured); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("the beat replayed to its executor: %d %s %v; want 401", status, body, err)
	}
}
