package xxljob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Paths an executor serves, under the address it registered.
const (
	PathRun      = "/run"     // Gen2, Gen33
	PathTrigger  = "/trigger" // Gen35
	PathKill     = "/kill"
	PathBeat     = "/beat"
	PathIdleBeat = "/idleBeat"
	PathLog      = "/log"
)

// Paths of the admin API executors call, under the admin's context path.
const (
	PathRegistry       = "/api/registry"
	PathRegistryRemove = "/api/registryRemove"
	PathCallback       = "/api/callback"
)

// maxAnswer bounds what is read of an executor's answer: a /log answer carries the whole
// rest of a log file, the rest is tiny.
const maxAnswer = 16 << 20

// Client calls the executors of one app in its generation.
type Client struct {
	HTTP *http.Client
	Gen  Generation
	// Token is the app's access token (XXL-JOB-ACCESS-TOKEN); executors with a token refuse
	// calls without it.
	Token string
	// AppName is sent as XXL-JOB-APPNAME, which 3.5 executors require (older ones ignore it).
	AppName string
}

// RefusedError is an executor's answer with a code other than 200.
type RefusedError struct {
	Path string
	Code int
	Msg  string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("XXL-JOB executor answered %s with code %d: %s", e.Path, e.Code, e.Msg)
}

// TriggerPath is the path a run is posted to in the client's generation.
func (c *Client) TriggerPath() string {
	if c.Gen == Gen35 {
		return PathTrigger
	}
	return PathRun
}

// Run posts a trigger; nil means the executor accepted (queued) the run, whose result comes
// later by callback.
func (c *Client) Run(ctx context.Context, addr string, p TriggerParam) error {
	_, err := c.call(ctx, addr, c.TriggerPath(), p)
	return err
}

// Kill stops the job's thread on the executor: its running run (which calls back failed,
// "killed") and every run of the job queued behind it.
func (c *Client) Kill(ctx context.Context, addr string, jobID int64) (string, error) {
	r, err := c.call(ctx, addr, PathKill, JobParam{JobID: jobID})
	return r.Msg, err
}

// Beat checks that the executor answers (FAILOVER routing).
func (c *Client) Beat(ctx context.Context, addr string) error {
	_, err := c.call(ctx, addr, PathBeat, struct{}{})
	return err
}

// IdleBeat reports whether the executor neither runs nor queues a run of the job
// (BUSYOVER routing). A refusal is "busy", not an error.
func (c *Client) IdleBeat(ctx context.Context, addr string, jobID int64) (bool, error) {
	_, err := c.call(ctx, addr, PathIdleBeat, JobParam{JobID: jobID})
	if re := (*RefusedError)(nil); errors.As(err, &re) {
		return false, nil
	}
	return err == nil, err
}

// Log reads the run's log from line from (1-based) to its end so far. logDateTime must be
// the one the trigger carried: the executor finds the file by its date.
func (c *Client) Log(ctx context.Context, addr string, logID, logDateTime int64, from int) (*LogResult, error) {
	r, err := c.call(ctx, addr, PathLog, LogParam{LogDateTim: logDateTime, LogDateTime: logDateTime, LogID: logID, FromLineNum: from})
	if err != nil {
		return nil, err
	}
	var out LogResult
	if r.Payload == nil {
		return &out, nil
	}
	if err := json.Unmarshal(r.Payload, &out); err != nil {
		return nil, fmt.Errorf("XXL-JOB %s: decode the log: %w", PathLog, err)
	}
	return &out, nil
}

// call POSTs body to addr+path with the app's headers and decodes the envelope; a code other
// than 200 is a *RefusedError.
func (c *Client) call(ctx context.Context, addr, path string, body any) (Reply, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return Reply{}, err
	}
	url := strings.TrimSuffix(addr, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	req.Header.Set(HeaderToken, c.Token)
	if c.AppName != "" {
		req.Header.Set(HeaderAppName, c.AppName)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Reply{}, fmt.Errorf("XXL-JOB %s: read the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reply{}, fmt.Errorf("XXL-JOB %s: HTTP status %d: %.200s", url, resp.StatusCode, bytes.TrimSpace(raw))
	}
	r, err := DecodeReply(raw)
	if err != nil {
		return Reply{}, fmt.Errorf("XXL-JOB %s: %w", url, err)
	}
	if !r.OK() {
		return r, &RefusedError{Path: path, Code: r.Code, Msg: r.Msg}
	}
	return r, nil
}
