package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// bodyRecorder is a chat or paging service's fake that keeps the JSON bodies it gets.
type bodyRecorder struct {
	url    string
	mu     sync.Mutex
	bodies []map[string]any
}

func newBodyRecorder(t *testing.T, answer string) *bodyRecorder {
	r := &bodyRecorder{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var b map[string]any
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("%s got %q: %v", req.URL.Path, raw, err)
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(hs.Close)
	r.url = hs.URL
	return r
}

func (r *bodyRecorder) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.bodies...)
}

// TestAlarmChannelsAPI: a job's Slack and PagerDuty targets and its alarm policy are set
// through the API on every database; the targets are stored sealed (neither the job row nor
// the audit log holds their tokens) and shown masked; a PUT of the job as read keeps them;
// two failures in a row cross the threshold of 2 once, and the next success is told as a
// recovery (PagerDuty: a resolve of the trigger's dedup_key). A mask with nothing stored
// behind it, a bad policy and a channel target on a server with no secret key are refused
// naming the field.
func TestAlarmChannelsAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		slack := newBodyRecorder(t, "ok")
		pd := newBodyRecorder(t, `{"status":"success"}`)
		var failing atomic.Bool
		failing.Store(true)
		e := newEnvOn(t, openStore(t, dialect), func(c *Config) {
			c.Scheduler.Secrets = testKeyring(t, "k1", 7)
			c.PagerDutyURL = pd.url + "/v2/enqueue"
			c.AlarmInterval = 5 * time.Millisecond
		}, func(s *Server) {
			s.Register("flip", func(ctx context.Context) error {
				if failing.Load() {
					return errors.New("disk full")
				}
				return nil
			})
		})
		const slackToken, pdKey = "T0001/B0001/slacktokensecret", "pdroutingkeysecret0123456789"
		var j api.Job
		e.call("POST", "/api/v1/jobs", map[string]any{"name": "nightly", "handler": "flip",
			"alarm_targets": []string{"slack:" + slack.url + "/services/" + slackToken, "pagerduty:" + pdKey},
			"alarm_policy":  map[string]any{"threshold": 2, "recovery": true}}, 201, &j)
		if strings.Join(j.AlarmTargets, " ") != "slack:*** pagerduty:***" {
			t.Fatalf("alarm_targets shown %v, want masked", j.AlarmTargets)
		}
		if j.AlarmPolicy != (api.AlarmPolicy{Threshold: 2, Recovery: true}) {
			t.Fatalf("alarm_policy %+v", j.AlarmPolicy)
		}
		// The job as read, sent back with another change, keeps the sealed targets.
		req := j.Request()
		req.MaxRetries = 0
		req.Description = "kept"
		e.call("PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), req, 200, &j)
		var row string
		if err := e.st.DB().QueryRow(fmt.Sprintf("SELECT alarm_targets FROM jobs WHERE id = %d", j.ID)).Scan(&row); err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{row, storedText(t, e.st.DB(), j.ID)} {
			if strings.Contains(text, "slacktokensecret") || strings.Contains(text, pdKey) {
				t.Fatalf("the database holds a target's secret in clear: %s", text)
			}
		}

		run := func(n int) []*store.Execution {
			e.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", j.ID), nil, 202, nil)
			return e.settled(j.ID, n)
		}
		run(1)
		if n := len(slack.got()); n != 0 {
			t.Errorf("one failure under a threshold of 2 told slack %d times", n)
		}
		run(2)
		failing.Store(false)
		run(3)
		sl, pg := slack.got(), pd.got()
		if len(sl) != 2 || !strings.Contains(fmt.Sprint(sl[0]["text"]), "nightly failed") ||
			!strings.Contains(fmt.Sprint(sl[1]["text"]), "recovered") {
			t.Errorf("slack got %v, want the alarm of the second failure, then the recovery", sl)
		}
		if len(pg) != 2 || pg[0]["event_action"] != "trigger" || pg[1]["event_action"] != "resolve" ||
			pg[0]["routing_key"] != pdKey || pg[1]["dedup_key"] != pg[0]["dedup_key"] {
			t.Errorf("pagerduty got %v, want a trigger, then a resolve of its dedup_key", pg)
		}

		req = j.Request()
		req.AlarmTargets = []string{"slack:***", "slack:***"}
		if err := e.callErr("PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), req, 400); err.Field != "alarm_targets[1]" {
			t.Errorf("two slack masks for one stored slack target: field %q (%s)", err.Field, err.Message)
		}
		if err := e.callErr("POST", "/api/v1/jobs", map[string]any{"name": "w", "handler": "flip",
			"alarm_policy": map[string]any{"window_ms": 60000}}, 400); err.Field != "alarm_policy.window_ms" {
			t.Errorf("window without threshold: field %q (%s)", err.Field, err.Message)
		}
	})
}

// TestAlarmChannelNeedsSecretKey: a server with no secret key refuses a chat target, whose
// token it could only keep in clear, naming the field.
func TestAlarmChannelNeedsSecretKey(t *testing.T) {
	e := newEnv(t, "sqlite")
	err := e.callErr("POST", "/api/v1/jobs", map[string]any{"name": "n", "handler": "noop",
		"alarm_targets": []string{"ops@example.com", "wecom:https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}}, 400)
	if err.Field != "alarm_targets[1]" || !strings.Contains(err.Message, "secret key") {
		t.Errorf("wecom target without a secret key: field %q, %q", err.Field, err.Message)
	}
}

// TestAlarmPolicyTwoNodes: two nodes on one database, both sweeping at once as two leaders
// that overlap would, deciding the failures of one job side by side: with a threshold of 3 in
// a row, 9 failures make exactly 3 alarms (one per crossing), whichever node decides which.
func TestAlarmPolicyTwoNodes(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		hook := newHookReceiver(t)
		st := openStore(t, dialect)
		tune := func(c *Config) { c.AlarmInterval = time.Millisecond }
		a, b := newEnvOn(t, st, tune, registerBoom), newEnvOn(t, st, tune, registerBoom)
		var j api.Job
		a.call("POST", "/api/v1/jobs", map[string]any{"name": "shared", "handler": "boom",
			"alarm_targets": []string{hook.url}, "alarm_policy": map[string]any{"threshold": 3}}, 201, &j)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, n := range []*env{a, b, a, b} {
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, err := n.srv.alarms.Sweep(ctx); err != nil && ctx.Err() == nil {
						t.Errorf("sweep: %v", err)
						return
					}
				}
			})
		}
		const runs = 9
		for range runs {
			a.call("POST", fmt.Sprintf("/api/v1/jobs/%d/run", j.ID), nil, 202, nil)
		}
		xs := a.settled(j.ID, runs)
		stop()
		wg.Wait()
		sent := 0
		for _, x := range xs {
			if x.AlarmState == store.AlarmSent {
				sent++
			} else if x.AlarmState != store.AlarmNone {
				t.Errorf("execution %d: alarm %s, want sent or none", x.ID, x.AlarmState)
			}
		}
		if got := hook.received(); sent != 3 || len(got) != 3 {
			t.Errorf("%d alarms recorded sent and %d delivered for %d failures, want 3 (threshold 3)", sent, len(got), runs)
		}
	})
}
