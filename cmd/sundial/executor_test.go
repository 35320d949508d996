package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/executor/executortest"
	"github.com/sundial-scheduler/sundial/executor/wire"
)

const (
	execToken = "executor-test-token"
	execWait  = 10 * time.Second
)

// startExecutorCmd runs the executor command's body against a fresh peer until the test
// ends, and returns the peer and the address the executor registered.
func startExecutorCmd(t *testing.T, enableShell bool) (*executortest.Peer, string) {
	t.Helper()
	peer := executortest.NewPeer(t, execToken)
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runExecutor(ctx, outW, io.Discard, executorOptions{servers: []string{peer.URL}, token: execToken, app: "ops",
			transport: executor.TransportPush, listen: "127.0.0.1:0", spoolDir: t.TempDir(), enableShell: enableShell,
			logFormat: "text", logLevel: "error", drainTimeout: 5 * time.Second})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		cancel()
		t.Fatalf("executor ended before its banner: %v", <-done)
	}
	banner := lines.Text()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("executor ended with %v", err)
		}
		if n := len(peer.Unregistrations()); n != 1 {
			t.Errorf("%d unregistrations on stop, want 1", n)
		}
	})
	_, after, ok := strings.Cut(banner, " is listening on ")
	addr, _, _ := strings.Cut(after, " ")
	if !ok || !strings.HasPrefix(addr, "http://127.0.0.1:") {
		t.Fatalf("banner %q: want the address", banner)
	}
	regs := peer.Registrations()
	if len(regs) == 0 || strings.Join(regs[0].Handlers, ",") != "http,shell" || regs[0].App != "ops" {
		t.Fatalf("registrations %+v: want app ops with http and shell", regs)
	}
	return peer, addr
}

func runOn(t *testing.T, peer *executortest.Peer, addr string, req wire.RunRequest) wire.Result {
	t.Helper()
	resp, err := peer.Run(context.Background(), addr, req)
	if err != nil || !resp.Accepted {
		t.Fatalf("run %d: %+v %v", req.ExecutionID, resp, err)
	}
	return peer.WaitResult(t, req.ExecutionID, execWait)
}

func TestExecutorCmdNeedsServerTokenApp(t *testing.T) {
	t.Setenv("SUNDIAL_TOKEN", "an-api-token") // the CLI's token must not be taken for the executor's
	t.Setenv("SUNDIAL_EXECUTOR_TOKEN", "")
	t.Setenv("SUNDIAL_SERVER", "http://localhost:1")
	t.Setenv("SUNDIAL_APP", "ops")
	code, _, errOut := runCLI(t, "", "executor")
	if code != 2 || !strings.Contains(errOut, "--token") {
		t.Errorf("exit %d, %q: want 2 naming --token", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "executor", "--token", "a-long-executor-token", "--app", "")
	if code != 2 || !strings.Contains(errOut, "--app") {
		t.Errorf("exit %d, %q: want 2 naming --app", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "executor", "--token", "a-long-executor-token", "--server", "localhost:8080")
	if code != 2 || !strings.Contains(errOut, "localhost:8080") {
		t.Errorf("exit %d, %q: want 2 naming the server URL", code, errOut)
	}
}

func TestExecutorCmdHTTPHandler(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/fail" {
			http.Error(w, "broken today", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "method=%s header=%s\nbody=%s\n", r.Method, r.Header.Get("X-Job"), b)
		fmt.Fprintf(w, "trigger=%s scheduled=%s fired=%s key=%s attempt=%s\n", r.Header.Get("Sundial-Trigger-Id"),
			r.Header.Get("Sundial-Scheduled-At"), r.Header.Get("Sundial-Fired-At"), r.Header.Get("Idempotency-Key"),
			r.Header.Get("Sundial-Attempt"))
		fmt.Fprintf(w, "interval=%s..%s backfill=%s zone=%s\n", r.Header.Get("Sundial-Interval-Start"), r.Header.Get("Sundial-Interval-End"),
			r.Header.Get("Sundial-Backfill-Id"), r.Header.Get("Sundial-Fire-Zone"))
	}))
	defer target.Close()
	peer, addr := startExecutorCmd(t, false)

	params := fmt.Sprintf(`{"method":"POST","url":%q,"headers":{"X-Job":"nightly"},"body":"hi"}`, target.URL+"/ok")
	res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "http", Params: params,
		TriggerID: 5, ScheduledAt: 1732230000000, FiredAt: 1732230000042, Attempt: 1, IdempotencyKey: "j1-t5-1732230000000-s0",
		IntervalStart: 1732226400000, IntervalEnd: 1732230000000, BackfillID: 4, FireZone: "Asia/Tokyo"})
	if res.State != wire.StateSucceeded {
		t.Errorf("2xx: %+v", res)
	}
	out := peer.Output(1)
	for _, want := range []string{"200 OK", "method=POST header=nightly", "body=hi",
		"trigger=5 scheduled=2024-11-21T23:00:00.000Z fired=2024-11-21T23:00:00.042Z key=j1-t5-1732230000000-s0 attempt=1",
		"interval=2024-11-21T22:00:00.000Z..2024-11-21T23:00:00.000Z backfill=4 zone=Asia/Tokyo"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q: want %q", out, want)
		}
	}

	res = runOn(t, peer, addr, wire.RunRequest{ExecutionID: 2, JobID: 1, Handler: "http",
		Params: fmt.Sprintf(`{"url":%q}`, target.URL+"/fail")})
	if res.State != wire.StateFailed || !strings.Contains(res.Message, "500") {
		t.Errorf("500: %+v, want failed naming the status", res)
	}
	if out := peer.Output(2); !strings.Contains(out, "broken today") {
		t.Errorf("output %q: want the body", out)
	}

	res = runOn(t, peer, addr, wire.RunRequest{ExecutionID: 3, JobID: 1, Handler: "http", Params: `{"url":"ftp://x"}`})
	if res.State != wire.StateFailed || !strings.Contains(res.Message, "ftp://x") {
		t.Errorf("bad url: %+v", res)
	}
}

func TestExecutorCmdShellRefusedUnlessEnabled(t *testing.T) {
	peer, addr := startExecutorCmd(t, false)
	marker := t.TempDir() + "/ran"
	res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "shell", Params: "touch " + marker})
	if res.State != wire.StateFailed || !strings.Contains(res.Message, "--enable-shell") {
		t.Errorf("shell without --enable-shell: %+v, want failed naming the flag", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the script ran")
	}
}

func TestExecutorCmdShell(t *testing.T) {
	peer, addr := startExecutorCmd(t, true)
	res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "shell", ShardIndex: 2, ShardTotal: 4,
		TriggerID: 5, ScheduledAt: 1732230000000, FiredAt: 1732230000042,
		Params: "echo one; echo two >&2; echo shard=$SUNDIAL_SHARD_INDEX/$SUNDIAL_SHARD_TOTAL id=$SUNDIAL_EXECUTION_ID; " +
			"echo trigger=$SUNDIAL_TRIGGER_ID at=$SUNDIAL_SCHEDULED_AT fired=$SUNDIAL_FIRED_AT key=$SUNDIAL_IDEMPOTENCY_KEY"})
	if res.State != wire.StateSucceeded {
		t.Errorf("script: %+v", res)
	}
	// The key is the executor's own (the request has none): trigger, scheduled time and shard.
	want := "one\ntwo\nshard=2/4 id=1\ntrigger=5 at=2024-11-21T23:00:00.000Z fired=2024-11-21T23:00:00.042Z key=j1-t5-1732230000000-s2\n"
	if out := peer.Output(1); out != want {
		t.Errorf("output %q, want %q", out, want)
	}

	res = runOn(t, peer, addr, wire.RunRequest{ExecutionID: 2, JobID: 1, Handler: "shell", Params: "echo bad; exit 3"})
	if res.State != wire.StateFailed || !strings.Contains(res.Message, "status 3") {
		t.Errorf("exit 3: %+v", res)
	}

	// On timeout the whole process group dies, including a child the script started.
	start := time.Now()
	res = runOn(t, peer, addr, wire.RunRequest{ExecutionID: 3, JobID: 1, Handler: "shell", TimeoutMs: 300,
		Params: "sleep 60 & echo child=$!; wait"})
	if res.State != wire.StateTimedOut {
		t.Errorf("timeout: %+v", res)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("timed out run took %v to report", d)
	}
	_, pidText, _ := strings.Cut(strings.TrimSpace(peer.Output(3)), "child=")
	pidText, _, _ = strings.Cut(pidText, "\n")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("output %q: no child pid", peer.Output(3))
	}
	// SIGKILL reaches every process of the group when the run ends, but a process dies only
	// when the kernel next runs it: wait for the child's exit rather than look at it at once
	// (which saw it still exiting about 1 time in 20, more under load).
	if !exits(t, pid, execWait) {
		t.Errorf("the script's child %d outlived the timeout by %v", pid, execWait)
	}

	// Kill works the same way.
	resp, err := peer.Run(context.Background(), addr, wire.RunRequest{ExecutionID: 4, JobID: 2, Handler: "shell", Params: "echo started; sleep 60"})
	if err != nil || !resp.Accepted {
		t.Fatal(resp, err)
	}
	peer.WaitOutput(t, 4, "started", execWait)
	if killed, err := peer.Kill(context.Background(), addr, 4); !killed || err != nil {
		t.Fatalf("kill: %v %v", killed, err)
	}
	if res := peer.WaitResult(t, 4, execWait); res.State != wire.StateCanceled || res.Message != "killed" {
		t.Errorf("killed: %+v", res)
	}
}

// TestExecutorCmdServers: --server takes several nodes, repeated or comma-separated, and
// SUNDIAL_SERVERS names them too; each one is checked (the bad one is named).
func TestExecutorCmdServers(t *testing.T) {
	t.Setenv("SUNDIAL_EXECUTOR_TOKEN", "a-long-executor-token")
	t.Setenv("SUNDIAL_APP", "ops")
	t.Setenv("SUNDIAL_SERVER", "")
	for _, args := range [][]string{
		{"--server", "http://a:1,localhost:2"},
		{"--server", "http://a:1", "--server", "localhost:2"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"executor"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "localhost:2") {
			t.Errorf("%v: exit %d, %q: want 2 naming the second server", args, code, errOut)
		}
	}
	os.Unsetenv("SUNDIAL_SERVER")
	t.Setenv("SUNDIAL_SERVERS", "http://a:1,localhost:3")
	code, _, errOut := runCLI(t, "", "executor")
	if code != 2 || !strings.Contains(errOut, "localhost:3") {
		t.Errorf("SUNDIAL_SERVERS: exit %d, %q: want 2 naming the second server", code, errOut)
	}
}

// TestExecutorTokenFromFileAndLength: the token may come from a file; a short one is
// refused before anything starts.
func TestExecutorTokenFromFileAndLength(t *testing.T) {
	t.Setenv("SUNDIAL_EXECUTOR_TOKEN", "")
	t.Setenv("SUNDIAL_APP", "ops")
	code, _, errOut := runCLI(t, "", "executor", "--token", "short", "--server", "http://localhost:1")
	if code != 2 || !strings.Contains(errOut, "at least 16") {
		t.Errorf("short token: exit %d, %q: want 2 naming the minimum", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("a-long-executor-token-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Past the token: the bad server URL is what stops it.
	code, _, errOut = runCLI(t, "", "executor", "--token-file", file, "--server", "localhost:8080")
	if code != 2 || !strings.Contains(errOut, "localhost:8080") {
		t.Errorf("token file: exit %d, %q: want 2 naming the server URL", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "executor", "--token-file", file, "--token", "a-long-executor-token", "--server", "http://localhost:1")
	if code != 2 || !strings.Contains(errOut, "give one") {
		t.Errorf("token and token file: exit %d, %q: want 2", code, errOut)
	}
}

// A secret job's params never reach what the built-in handlers write: the URL's user info,
// its query values, the headers' values and the body are masked in the output lines (the
// handler's own and the server's answer echoing them) and in the result's message, on a
// first run and on a retry alike.
func TestExecutorCmdHTTPHandlerSecretParams(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		pw, _ := r.URL.User.Password()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
		fmt.Fprintf(w, "query=%s auth=%s body=%s user=%s\n", r.URL.RawQuery, r.Header.Get("Authorization"), b, pw)
	}))
	defer target.Close()
	peer, addr := startExecutorCmd(t, false)
	secrets := []string{"UserInfoSecret", "QuerySecret", "Bearer HeaderSecret", "BodySecret", "Run Now/Secret"}
	u := strings.Replace(target.URL, "http://", "http://admin:UserInfoSecret@", 1)
	for i, path := range []string{"/ok", "/fail"} {
		params := fmt.Sprintf(`{"method":"POST","url":%q,"headers":{"Authorization":"Bearer HeaderSecret"},"body":"BodySecret"}`,
			u+path+"?pw=QuerySecret&note="+url.QueryEscape("Run Now/Secret"))
		for attempt := range 2 {
			id := int64(10 + 2*i + attempt)
			res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: id, JobID: 1, Handler: "http", Params: params,
				ParamsSecret: true, Attempt: attempt})
			out := peer.Output(id)
			if (path == "/fail") != (res.State == wire.StateFailed) {
				t.Errorf("run %d of %s: %+v", id, path, res)
			}
			if !strings.Contains(out, "POST http://***@127.0.0.1") || !strings.Contains(out, "pw=***") {
				t.Errorf("run %d output %q: want the URL with its user info and query masked", id, out)
			}
			for _, s := range secrets {
				for _, form := range []string{s, url.QueryEscape(s)} {
					if strings.Contains(out, form) || strings.Contains(res.Message, form) {
						t.Errorf("run %d (%s, attempt %d) shows %q: output %q, message %q", id, path, attempt, form, out, res.Message)
					}
				}
			}
		}
	}
}

// TestExecutorCmdShellWorkflow gives a script its workflow input as the file
// $SUNDIAL_WORKFLOW_INPUT names, and sends back as the run's result what it writes to
// $SUNDIAL_RESULT; a result that is not JSON fails the run.
func TestExecutorCmdShellWorkflow(t *testing.T) {
	peer, addr := startExecutorCmd(t, true)
	input := `{"run_id":7,"node":"load","params":{"day":"2024-01-02"},"parents":{"extract":{"rows":3}}}`
	res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "shell", WorkflowInput: wire.RawJSON(input),
		Params: `cat "$SUNDIAL_WORKFLOW_INPUT"; echo; printf '{"loaded":true}' > "$SUNDIAL_RESULT"`})
	if res.State != wire.StateSucceeded || res.Result != `{"loaded":true}` {
		t.Errorf("script: %+v, want succeeded with the result it wrote", res)
	}
	if out := peer.Output(1); out != input+"\n" {
		t.Errorf("output %q, want the input %q", out, input)
	}
	res = runOn(t, peer, addr, wire.RunRequest{ExecutionID: 2, JobID: 1, Handler: "shell",
		Params: `test -z "$SUNDIAL_WORKFLOW_INPUT" && echo 'not json' > "$SUNDIAL_RESULT"`})
	if res.State != wire.StateFailed || !strings.Contains(res.Message, "not JSON") || res.Result != "" {
		t.Errorf("a result that is not JSON: %+v, want failed", res)
	}
}
