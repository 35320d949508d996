package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// fakeSMTP is a mail server speaking just enough SMTP for net/smtp: EHLO/HELO, MAIL, RCPT,
// DATA, RSET, NOOP, QUIT. It keeps every message it accepts.
type fakeSMTP struct {
	ln net.Listener
	mu sync.Mutex
	// rejectRcpts answers the first this many RCPTs with 451 (a temporary failure).
	rejectRcpts int
	rcpts       int
	mails       []fakeMail
}

type fakeMail struct {
	from string
	to   []string
	data string
}

func newFakeSMTP(t *testing.T, rejectRcpts int) *fakeSMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSMTP{ln: ln, rejectRcpts: rejectRcpts}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); f.serve(c) }()
		}
	}()
	return f
}

func (f *fakeSMTP) addr() string { return f.ln.Addr().String() }

func (f *fakeSMTP) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(s string) { fmt.Fprintf(c, "%s\r\n", s) }
	say("220 fake ESMTP")
	var m fakeMail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		arg := func(prefix string) string { // the address in "MAIL FROM:<a@b> BODY=8BITMIME"
			a := strings.TrimSpace(line[len(prefix):])
			a, _, _ = strings.Cut(strings.TrimPrefix(a, "<"), ">")
			return a
		}
		switch verb {
		case "EHLO":
			say("250-fake")
			say("250 8BITMIME")
		case "HELO", "NOOP":
			say("250 ok")
		case "RSET":
			m = fakeMail{}
			say("250 ok")
		case "MAIL":
			m = fakeMail{from: arg("MAIL FROM:")}
			say("250 ok")
		case "RCPT":
			f.mu.Lock()
			f.rcpts++
			reject := f.rcpts <= f.rejectRcpts
			f.mu.Unlock()
			if reject {
				say("451 4.3.0 try again later")
				continue
			}
			m.to = append(m.to, arg("RCPT TO:"))
			say("250 ok")
		case "DATA":
			say("354 end with <CRLF>.<CRLF>")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, ".")) // undo dot-stuffing
			}
			m.data = b.String()
			f.mu.Lock()
			f.mails = append(f.mails, m)
			f.mu.Unlock()
			say("250 queued")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 not implemented")
		}
	}
}

func (f *fakeSMTP) received() []fakeMail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeMail(nil), f.mails...)
}

// hookReceiver is a webhook endpoint that keeps every event and answers status.
type hookReceiver struct {
	url    string
	status atomic.Int32
	hits   atomic.Int32
	mu     sync.Mutex
	events []alarm.Event
	keys   []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.status.Store(http.StatusNoContent)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		status := int(h.status.Load())
		if status/100 == 2 {
			var ev alarm.Event
			if err := json.Unmarshal(body, &ev); err != nil || r.Header.Get("Content-Type") != "application/json" || r.Method != "POST" {
				t.Errorf("webhook got %s %s %q: %v", r.Method, r.Header.Get("Content-Type"), body, err)
			}
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
			h.mu.Unlock()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(hs.Close)
	h.url = hs.URL + "/hooks/sundial?secret=s3"
	return h
}

func (h *hookReceiver) received() []alarm.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]alarm.Event(nil), h.events...)
}

// alarmEnv is a server on the dialect whose "boom" handler fails, with alarms going to a
// fake mail server; sweeps run every few milliseconds, so they run repeatedly.
func alarmEnv(t *testing.T, dialect string, smtp *fakeSMTP, tune func(*Config)) *env {
	return newEnvOn(t, openStore(t, dialect), func(c *Config) {
		c.SMTP = alarm.SMTP{Addr: smtp.addr(), From: "sundial@example.com"}
		c.AlarmInterval = 5 * time.Millisecond
		c.AlarmBackoff = time.Millisecond
		if tune != nil {
			tune(c)
		}
	}, registerBoom)
}

func registerBoom(s *Server) {
	s.Register("boom", func(ctx context.Context) error { return errors.New("disk full") })
}

func (e *env) executionsOf(jobID int64) []*store.Execution {
	e.t.Helper()
	xs, err := e.st.ExecutionList(context.Background(), store.ExecutionFilter{JobID: jobID, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return xs
}

// settled waits until the job has n executions, all finished with their alarms no longer
// pending or being sent.
func (e *env) settled(jobID int64, n int) []*store.Execution {
	e.t.Helper()
	var xs []*store.Execution
	eventually(e.t, fmt.Sprintf("%d settled executions of job %d", n, jobID), func() bool {
		xs = e.executionsOf(jobID)
		if len(xs) != n {
			return false
		}
		for _, x := range xs {
			if !x.State.Terminal() || x.AlarmState == store.AlarmPending || x.AlarmState == store.AlarmSending {
				return false
			}
		}
		return true
	})
	return xs
}

// countByExecution counts the alarms each execution got by e-mail and by webhook.
func countByExecution(t *testing.T, mails []fakeMail, events []alarm.Event) (map[int64]int, map[int64]int) {
	byMail, byHook := map[int64]int{}, map[int64]int{}
	for _, m := range mails {
		var id int64
		i := strings.Index(m.data, "(execution ")
		if i < 0 {
			t.Fatalf("mail without an execution id: %q", m.data)
		}
		fmt.Sscanf(m.data[i:], "(execution %d)", &id)
		byMail[id]++
	}
	for _, ev := range events {
		byHook[ev.ExecutionID]++
	}
	return byMail, byHook
}

// TestAlarmsOnFailure: each failed execution of a job with alarm targets sends exactly one
// e-mail and one webhook, however often the alarm duty runs; successes and jobs without
// targets send nothing.
func TestAlarmsOnFailure(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		smtp, hook := newFakeSMTP(t, 0), newHookReceiver(t)
		e := alarmEnv(t, dialect, smtp, nil)
		var failing, quiet, fine api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "nightly-export", "handler": "boom",
			"alarm_targets": []string{"mailto:ops@example.com", hook.url}}, 201, &failing)
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "quiet", "handler": "boom"}, 201, &quiet)
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "fine", "handler": "noop",
			"alarm_targets": []string{"ops@example.com"}}, 201, &fine)
		for range 3 {
			for _, j := range []api.Job{failing, quiet, fine} {
				e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", j.ID), nil, 202, nil)
			}
		}
		xs := e.settled(failing.ID, 3)
		for _, x := range xs {
			if x.State != store.ExecFailed || x.AlarmState != store.AlarmSent {
				t.Errorf("execution %d: %s, alarm %s; want failed, alarm sent", x.ID, x.State, x.AlarmState)
			}
		}
		for _, x := range append(e.settled(quiet.ID, 3), e.settled(fine.ID, 3)...) {
			if x.AlarmState != store.AlarmNone {
				t.Errorf("execution %d of job %d (%s): alarm %s, want none", x.ID, x.JobID, x.State, x.AlarmState)
			}
		}
		// More sweeps, as a leader makes every few seconds, find nothing to send.
		for range 3 {
			if res, err := e.srv.alarms.Sweep(context.Background()); err != nil || res != (alarm.Result{}) {
				t.Fatalf("a sweep after every alarm was sent: %+v, %v", res, err)
			}
		}

		mails, events := smtp.received(), hook.received()
		byMail, byHook := countByExecution(t, mails, events)
		for _, x := range xs {
			if byMail[x.ID] != 1 || byHook[x.ID] != 1 {
				t.Errorf("execution %d: %d e-mails and %d webhooks, want one each", x.ID, byMail[x.ID], byHook[x.ID])
			}
		}
		if len(mails) != 3 || len(events) != 3 {
			t.Fatalf("%d e-mails and %d webhooks for 3 failures", len(mails), len(events))
		}
		m := mails[0]
		if m.from != "sundial@example.com" || len(m.to) != 1 || m.to[0] != "ops@example.com" ||
			!strings.Contains(m.data, "Subject: Sundial: job default/nightly-export failed") || !strings.Contains(m.data, "disk full") {
			t.Errorf("e-mail: from %q to %v:\n%s", m.from, m.to, m.data)
		}
		ev := events[0]
		if ev.Event != "execution.failed" || ev.JobID != failing.ID || ev.JobName != "nightly-export" || ev.JobGroup != "default" ||
			ev.State != "failed" || !strings.Contains(ev.HandleMsg, "disk full") || ev.FinishedAt == nil {
			t.Errorf("webhook event: %+v", ev)
		} else if _, err := time.Parse(time.RFC3339, *ev.FinishedAt); err != nil {
			t.Errorf("finished_at %q is not RFC 3339: %v", *ev.FinishedAt, err)
		}
		if k := hook.keys[0]; k != fmt.Sprintf("sundial-execution-%d", ev.ExecutionID) {
			t.Errorf("Idempotency-Key %q", k)
		}

		// The API shows the alarm state.
		var x execRefAlarm
		e.call("GET", fmt.Sprintf("/api/v1/executions/%d", xs[0].ID), nil, 200, &x)
		if x.AlarmState != "sent" {
			t.Errorf("GET execution: alarm_state %q, want sent", x.AlarmState)
		}
	})
}

type execRefAlarm struct {
	AlarmState string `json:"alarm_state"`
}

// TestAlarmAfterLastRetry: a job that is retried alarms once, for its last attempt.
func TestAlarmAfterLastRetry(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		smtp, hook := newFakeSMTP(t, 0), newHookReceiver(t)
		e := alarmEnv(t, dialect, smtp, nil)
		var j api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "flaky", "handler": "boom", "max_retries": 2,
			"retry_backoff_ms": 1, "alarm_targets": []string{hook.url}}, 201, &j)
		e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", j.ID), nil, 202, nil)
		xs := e.settled(j.ID, 3)
		for _, x := range xs {
			want := store.AlarmNone
			if x.Attempt == 2 {
				want = store.AlarmSent
			}
			if x.State != store.ExecFailed || x.AlarmState != want {
				t.Errorf("attempt %d: %s, alarm %s; want failed, alarm %s", x.Attempt, x.State, x.AlarmState, want)
			}
		}
		events := hook.received()
		if len(events) != 1 || events[0].Attempt != 2 {
			t.Fatalf("webhooks: %+v; want one, for attempt 2", events)
		}
		if n := len(smtp.received()); n != 0 {
			t.Errorf("%d e-mails for a job without e-mail targets", n)
		}
	})
}

// TestAlarmDeliveryRetried: a target that fails is tried AlarmAttempts times, then the alarm
// is failed and not tried again; a temporary mail failure is retried until it is delivered.
func TestAlarmDeliveryRetried(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		smtp, hook := newFakeSMTP(t, 2), newHookReceiver(t) // the first two RCPTs are refused
		hook.status.Store(http.StatusServiceUnavailable)
		e := alarmEnv(t, dialect, smtp, func(c *Config) { c.AlarmAttempts = 3 })
		var mailed, hooked api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "mailed", "handler": "boom",
			"alarm_targets": []string{"ops@example.com"}}, 201, &mailed)
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "hooked", "handler": "boom",
			"alarm_targets": []string{hook.url}}, 201, &hooked)
		e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", mailed.ID), nil, 202, nil)
		e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", hooked.ID), nil, 202, nil)

		if x := e.settled(mailed.ID, 1)[0]; x.AlarmState != store.AlarmSent {
			t.Errorf("mail alarm after two refusals: %s, want sent (third attempt)", x.AlarmState)
		}
		if got := smtp.received(); len(got) != 1 {
			t.Errorf("%d e-mails accepted, want 1", len(got))
		}
		if x := e.settled(hooked.ID, 1)[0]; x.AlarmState != store.AlarmFailed {
			t.Errorf("webhook alarm answered 503 every time: %s, want failed", x.AlarmState)
		}
		if n := hook.hits.Load(); n != 3 {
			t.Errorf("the failing webhook was called %d times, want 3 (AlarmAttempts)", n)
		}
		if res, err := e.srv.alarms.Sweep(context.Background()); err != nil || res != (alarm.Result{}) {
			t.Errorf("a sweep after the alarm failed: %+v, %v", res, err)
		}
		if n := hook.hits.Load(); n != 3 {
			t.Errorf("a failed alarm was tried again: %d calls", n)
		}
	})
}

// TestAlarmsTwoNodes: two nodes on one database, both sweeping at once as two leaders that
// overlap would, send one alarm per failure.
func TestAlarmsTwoNodes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		smtp, hook := newFakeSMTP(t, 0), newHookReceiver(t)
		st := openStore(t, dialect)
		tune := func(c *Config) {
			c.SMTP = alarm.SMTP{Addr: smtp.addr(), From: "sundial@example.com"}
			c.AlarmInterval = time.Millisecond
		}
		a, b := newEnvOn(t, st, tune, registerBoom), newEnvOn(t, st, tune, registerBoom)
		var j api.Job
		a.call("POST", "/api/v1/jobs", map[string]any{"name": "shared", "handler": "boom",
			"alarm_targets": []string{"ops@example.com", hook.url}}, 201, &j)

		// Both nodes' senders sweep in a loop, whoever leads, while the failures happen.
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, n := range []*env{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if _, err := n.srv.alarms.Sweep(ctx); err != nil && ctx.Err() == nil {
						t.Errorf("sweep: %v", err)
						return
					}
				}
			}()
		}
		const runs = 8
		for range runs {
			a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", j.ID), nil, 202, nil)
		}
		xs := a.settled(j.ID, runs)
		stop()
		wg.Wait()

		byMail, byHook := countByExecution(t, smtp.received(), hook.received())
		for _, x := range xs {
			if x.AlarmState != store.AlarmSent || byMail[x.ID] != 1 || byHook[x.ID] != 1 {
				t.Errorf("execution %d: alarm %s, %d e-mails, %d webhooks; want sent, one each", x.ID, x.AlarmState, byMail[x.ID], byHook[x.ID])
			}
		}
		if len(byMail) != runs || len(byHook) != runs {
			t.Errorf("alarms for %d and %d executions, want %d", len(byMail), len(byHook), runs)
		}
	})
}

// TestLostExecutionAlarms: an execution lost with its executor alarms when no retry is left,
// in the transaction that declares it lost; one that is retried does not.
func TestLostExecutionAlarms(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		final := &store.Job{Group: "g", Name: "final", TargetKind: store.TargetRemote, App: "billing", Handler: "h",
			Enabled: true, AlarmTargets: []string{"ops@example.com"}}
		retried := &store.Job{Group: "g", Name: "retried", TargetKind: store.TargetRemote, App: "billing", Handler: "h",
			Enabled: true, MaxRetries: 1, AlarmTargets: []string{"ops@example.com"}}
		for _, j := range []*store.Job{final, retried} {
			if err := e.st.JobInsert(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		mk := func(job int64) *store.Execution {
			// Fired now: a fire of 1970 is history the leader's retention may delete at any time.
			now := time.Now().UnixMilli()
			return &store.Execution{JobID: job, ScheduledAt: now, FiredAt: now, Cause: store.CauseAPI, State: store.ExecRunning,
				ExecutorAddress: "http://10.0.0.1:9999", ExecutorApp: "billing"}
		}
		xf, xr := mk(final.ID), mk(retried.ID)
		if _, err := e.st.ExecutionsInsert(ctx, []*store.Execution{xf, xr}); err != nil {
			t.Fatal(err)
		}
		if out, err := e.srv.sched.Engine().LoseOnExecutor(ctx, "billing", "http://10.0.0.1:9999"); err != nil || out.Lost != 2 {
			t.Fatalf("LoseOnExecutor = %+v, %v; want 2 lost", out, err)
		}
		for _, c := range []struct {
			x    *store.Execution
			want store.AlarmState
		}{{xf, store.AlarmPending}, {xr, store.AlarmNone}} {
			got, err := e.st.ExecutionGet(ctx, c.x.ID)
			if err != nil {
				t.Fatal(err)
			}
			// The sender may already have claimed the pending one (and failed it: no SMTP).
			ok := got.AlarmState == c.want || c.want == store.AlarmPending && got.AlarmState != store.AlarmNone
			if got.State != store.ExecLost || !ok {
				t.Errorf("job %d: %s, alarm %s; want lost, alarm %s", c.x.JobID, got.State, got.AlarmState, c.want)
			}
		}
	})
}

// TestAlarmTargetsAPI: targets are stored, returned and replaced through the REST API, and a
// bad one is refused naming the field and the value.
func TestAlarmTargetsAPI(t *testing.T) {
	e := newEnv(t, "sqlite")
	var j struct {
		ID           int64    `json:"id"`
		AlarmTargets []string `json:"alarm_targets"`
		Warnings     []string `json:"warnings"`
	}
	e.call("POST", "/api/v1/jobs", map[string]any{"name": "a", "handler": "noop",
		"alarm_targets": []string{"mailto:ops@example.com", "https://hooks.example.com/x"}}, 201, &j)
	if fmt.Sprint(j.AlarmTargets) != "[mailto:ops@example.com https://hooks.example.com/x]" {
		t.Errorf("created with alarm_targets %v", j.AlarmTargets)
	}
	if len(j.Warnings) != 1 || !strings.Contains(j.Warnings[0], "--smtp-addr") {
		t.Errorf("an e-mail target on a server without SMTP: warnings %q", j.Warnings)
	}
	e.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), map[string]any{"name": "a", "handler": "noop",
		"alarm_targets": []string{"http://10.0.0.5/hook"}}, 200, &j)
	e.call("GET", fmt.Sprintf("/api/v1/jobs/%d", j.ID), nil, 200, &j)
	if fmt.Sprint(j.AlarmTargets) != "[http://10.0.0.5/hook]" {
		t.Errorf("after update: alarm_targets %v", j.AlarmTargets)
	}
	e.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), map[string]any{"name": "a", "handler": "noop"}, 200, &j)
	if j.AlarmTargets == nil || len(j.AlarmTargets) != 0 {
		t.Errorf("after an update without targets: alarm_targets %#v, want []", j.AlarmTargets)
	}

	for _, bad := range []string{"ops", "ops@example", "Ops <ops@example.com>", "a@b.c,d@e.f", "ftp://x/y", "https://", "https://u:pw@h/x"} {
		err := e.callErr("POST", "/api/v1/jobs", map[string]any{"name": "b", "handler": "noop",
			"alarm_targets": []string{"ok@example.com", bad}}, 400)
		want := bad
		if strings.Contains(bad, "pw@") {
			want = "xxxxx@h/x" // the password is not echoed
		}
		if err.Field != "alarm_targets[1]" || !strings.Contains(err.Message, want) {
			t.Errorf("target %q: field %q, message %q", bad, err.Field, err.Message)
		}
	}
}

// TestAlarmsLeftSending: an alarm a node claimed for delivery and never recorded (the node
// died mid-delivery) is listed by its alarm state through the API and the typed client, and
// once its claim is old it is sent again, with its idempotency key, and listed as sent.
func TestAlarmsLeftSending(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		hook := newHookReceiver(t)
		// The leader's own sweeps are an hour apart: the test's sweeps are the ones that
		// take the alarm (one of the leader's, cut short by a leadership change on a loaded
		// machine, would leave it sending with a fresh claim for ten minutes).
		e := newEnvWith(t, dialect, func(c *Config) { c.AlarmInterval = time.Hour })
		job := &store.Job{Group: "g", Name: "left", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
			Concurrency: store.ConcurrencyAllow, AlarmTargets: []string{hook.url}}
		if err := e.st.JobInsert(ctx, job); err != nil {
			t.Fatal(err)
		}
		// Fired now: a failure of 1970 is history the leader's retention deletes as soon as it
		// runs (when it takes the lead, late on a loaded machine), and with it the alarm.
		now := time.Now().UnixMilli()
		// Stored without an alarm and moved to sending at once: a pending alarm could be
		// claimed by the leader's first sweep, which runs as soon as it leads, before the
		// test's claim.
		x := &store.Execution{JobID: job.ID, ScheduledAt: now, FiredAt: now, Cause: store.CauseAPI, State: store.ExecFailed,
			AlarmState: store.AlarmNone}
		if _, err := e.st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
			t.Fatal(err)
		}
		// The dead node's claim: to sending, then nothing.
		if won, err := e.st.ExecutionsSetAlarm(ctx, []int64{x.ID}, store.AlarmNone, store.AlarmSending); err != nil || len(won) != 1 {
			t.Fatalf("claim the alarm: %v, %v", won, err)
		}
		listed := func(state string) []int64 {
			t.Helper()
			page, err := e.client().ListExecutions(ctx, api.ExecutionFilter{AlarmState: state}, api.ListOptions{})
			if err != nil {
				t.Fatalf("list alarm_state=%s: %v", state, err)
			}
			var ids []int64
			for _, got := range page.Items {
				if got.AlarmState != state {
					t.Errorf("alarm_state=%s listed execution %d with alarm %s", state, got.ID, got.AlarmState)
				}
				ids = append(ids, got.ID)
			}
			return ids
		}
		if got := listed("sending"); !slices.Equal(got, []int64{x.ID}) {
			t.Fatalf("alarms sending: %v, want [%d]", got, x.ID)
		}
		if got := listed("pending"); len(got) != 0 {
			t.Fatalf("alarms pending: %v, want none", got)
		}
		if eb := e.callErr("GET", "/api/v1/executions?alarm_state=lost", nil, 400); eb.Field != "alarm_state" {
			t.Errorf("bad alarm_state: %+v", eb)
		}

		// An hour later the claim is abandoned: the leader's sweep sends it again.
		if _, err := e.st.DB().ExecContext(ctx, "UPDATE executions SET alarm_claimed_at = alarm_claimed_at - 3600000 WHERE id = "+
			strconv.FormatInt(x.ID, 10)); err != nil {
			t.Fatal(err)
		}
		last := store.AlarmSending
		eventually(t, "the abandoned alarm sent", func() bool {
			// Again until it is sent: a sweep skips a row another transaction holds.
			if _, err := e.srv.alarms.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := e.st.ExecutionGet(ctx, x.ID); err == nil && got.AlarmState != last {
				last = got.AlarmState
				t.Logf("alarm %s", last) // what a timeout saw last
			}
			return slices.Equal(listed("sent"), []int64{x.ID})
		})
		if got := listed("sending"); len(got) != 0 {
			t.Errorf("alarms still sending: %v", got)
		}
		hook.mu.Lock()
		keys := slices.Clone(hook.keys)
		hook.mu.Unlock()
		if want := fmt.Sprintf("sundial-execution-%d", x.ID); len(keys) != 1 || keys[0] != want {
			t.Errorf("webhook deliveries with keys %q, want one with %q", keys, want)
		}
	})
}
