package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial/executor"
)

// httpParams are the params of the http handler.
type httpParams struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

const (
	httpBodyLines = 20      // how many lines of a response go to the output
	httpBodyBytes = 8 << 10 // and at most this much of it
)

// httpHandler calls a URL; a 2xx answer is success. The run's context bounds the call.
func httpHandler(client *http.Client) executor.Handler {
	if client == nil {
		client = &http.Client{} // no timeout of its own: the job's timeout cancels the context
	}
	return func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		log := executor.Logger(ctx)
		var p httpParams
		dec := json.NewDecoder(strings.NewReader(run.Params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf(`http handler: params %q: want {"method":…,"url":…,"headers":{…},"body":…}: %w`, shownParams(run), err)
		}
		if p.Method == "" {
			p.Method = http.MethodGet
		}
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("http handler: url %q: want an http(s) URL", p.URL)
		}
		var body io.Reader
		if p.Body != "" {
			body = strings.NewReader(p.Body)
		}
		req, err := http.NewRequestWithContext(ctx, strings.ToUpper(p.Method), p.URL, body)
		if err != nil {
			return fmt.Errorf("http handler: %s %s: %w", p.Method, p.URL, err)
		}
		for _, f := range runFields(run) {
			req.Header.Set(f.header, f.value)
		}
		for k, v := range p.Headers { // the job's own headers win
			req.Header.Set(k, v)
		}
		log.Info(fmt.Sprintf("%s %s", req.Method, p.URL))
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("http handler: %s %s: %w", req.Method, p.URL, err)
		}
		defer resp.Body.Close()
		log.Info(fmt.Sprintf("%s %s", resp.Proto, resp.Status))
		sc := bufio.NewScanner(io.LimitReader(resp.Body, httpBodyBytes))
		for n := 0; n < httpBodyLines && sc.Scan(); n++ {
			log.Info(sc.Text())
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // lets the connection be reused
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("%s %s: status %s", req.Method, p.URL, resp.Status)
		}
		return nil
	}
}

// runField is one fact about a run that the built-in handlers pass on: to a script as the
// environment variable SUNDIAL_<env>, to a URL as the request header <header>.
type runField struct{ env, header, value string }

// runTimeLayout is RFC 3339 with milliseconds, in UTC.
const runTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// runFields lists what a handler's script or URL learns of its run. The fired time is left
// out when the server did not send it.
func runFields(run executor.Run) []runField {
	fs := []runField{
		{"EXECUTION_ID", "Sundial-Execution-Id", strconv.FormatInt(run.ExecutionID, 10)},
		{"JOB_ID", "Sundial-Job-Id", strconv.FormatInt(run.JobID, 10)},
		{"TRIGGER_ID", "Sundial-Trigger-Id", strconv.FormatInt(run.TriggerID, 10)},
		{"SCHEDULED_AT", "Sundial-Scheduled-At", run.ScheduledAt.UTC().Format(runTimeLayout)},
		{"SHARD_INDEX", "Sundial-Shard-Index", strconv.Itoa(run.ShardIndex)},
		{"SHARD_TOTAL", "Sundial-Shard-Total", strconv.Itoa(run.ShardTotal)},
		{"ATTEMPT", "Sundial-Attempt", strconv.Itoa(run.Attempt)},
		// The header is the one the IETF's idempotency-key draft names.
		{"IDEMPOTENCY_KEY", "Idempotency-Key", run.IdempotencyKey},
	}
	if !run.FiredAt.IsZero() {
		fs = append(fs, runField{"FIRED_AT", "Sundial-Fired-At", run.FiredAt.UTC().Format(runTimeLayout)})
	}
	// The data interval, for runs a schedule made (a fire, a coalesced catch-up, a backfill).
	if !run.IntervalEnd.IsZero() {
		fs = append(fs, runField{"INTERVAL_START", "Sundial-Interval-Start", run.IntervalStart.UTC().Format(runTimeLayout)},
			runField{"INTERVAL_END", "Sundial-Interval-End", run.IntervalEnd.UTC().Format(runTimeLayout)})
	}
	if run.BackfillID != 0 {
		fs = append(fs, runField{"BACKFILL_ID", "Sundial-Backfill-Id", strconv.FormatInt(run.BackfillID, 10)})
	}
	if run.FireZone != "" {
		fs = append(fs, runField{"FIRE_ZONE", "Sundial-Fire-Zone", run.FireZone})
	}
	return fs
}

// shownParams is what an error may quote of a run's params: nothing of secret ones.
func shownParams(run executor.Run) string {
	if run.ParamsSecret {
		return "(secret)"
	}
	return truncateParams(run.Params)
}

func truncateParams(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// errShellDisabled is the failure of every shell run on an executor started without
// --enable-shell.
var errShellDisabled = errors.New("shell handler is disabled on this executor: start it with --enable-shell (or SUNDIAL_ENABLE_SHELL=true) to allow scripts")

// shellHandler runs the params as a /bin/sh script in its own process group, streams its
// output lines, and succeeds on exit status 0. Canceling the run (timeout, kill) kills the
// whole group, so children the script started do not outlive it.
func shellHandler(enabled bool) executor.Handler {
	return func(ctx context.Context) error {
		if !enabled {
			return errShellDisabled
		}
		run, _ := executor.RunFrom(ctx)
		log := executor.Logger(ctx)
		if strings.TrimSpace(run.Params) == "" {
			return errors.New("shell handler: params are empty: want the script to run")
		}
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", run.Params)
		cmd.Env = os.Environ()
		for _, f := range runFields(run) {
			cmd.Env = append(cmd.Env, "SUNDIAL_"+f.env+"="+f.value)
		}
		files, err := os.MkdirTemp("", "sundial-run-")
		if err != nil {
			return fmt.Errorf("shell handler: %w", err)
		}
		defer os.RemoveAll(files)
		env, err := workflowFiles(run, files)
		if err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		// One pipe for stdout and stderr keeps their lines in the order they were written.
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("shell handler: %w", err)
		}
		defer r.Close()
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			w.Close()
			return fmt.Errorf("shell handler: start /bin/sh: %w", err)
		}
		w.Close() // the child holds its own copy; EOF comes when the group has closed it
		read := make(chan struct{})
		go func() {
			defer close(read)
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				log.Info(sc.Text())
			}
		}()
		werr := cmd.Wait()
		// A process that left the group may hold the pipe open: do not wait for it forever.
		select {
		case <-read:
		case <-time.After(2 * time.Second):
			r.Close()
			<-read
		}
		if werr != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				return fmt.Errorf("script exited with status %d", ee.ExitCode())
			}
			return fmt.Errorf("shell handler: %w", werr)
		}
		return scriptResult(ctx, files)
	}
}

// workflowFiles gives a script its workflow input and a place for its result: the input
// (a workflow node's params and parents' results, as JSON) is written to a file named by
// SUNDIAL_WORKFLOW_INPUT, and what the script writes to the file SUNDIAL_RESULT names is its
// result.
func workflowFiles(run executor.Run, dir string) ([]string, error) {
	env := []string{"SUNDIAL_RESULT=" + filepath.Join(dir, "result.json")}
	if run.WorkflowInput != "" {
		in := filepath.Join(dir, "input.json")
		if err := os.WriteFile(in, []byte(run.WorkflowInput), 0o600); err != nil {
			return nil, fmt.Errorf("shell handler: write the workflow input: %w", err)
		}
		env = append(env, "SUNDIAL_WORKFLOW_INPUT="+in)
	}
	return env, nil
}

// scriptResult records what a script wrote to $SUNDIAL_RESULT as its run's result; a result
// that is not JSON fails the run.
func scriptResult(ctx context.Context, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("shell handler: read the result: %w", err)
	}
	if !json.Valid(b) {
		return fmt.Errorf("the script's result in $SUNDIAL_RESULT is not JSON: %s", truncateParams(string(b)))
	}
	return executor.SetResult(ctx, json.RawMessage(bytes.TrimSpace(b)))
}
