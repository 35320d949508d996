package alarm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// testKeys is a keyring with one key, for sealing channel targets.
func testKeys(t *testing.T) *secret.Keyring {
	t.Helper()
	k, err := secret.Parse("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", secret.KeyLen))))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fakeService is one chat or paging service: it checks each request the way the service
// does (path, token, signature, body shape) and answers as the service does.
type fakeService struct {
	// check returns what is wrong with a request, "" when the service would take it.
	check func(r *http.Request, body map[string]any) string
	// refuse is the service's answer to a bad request; ok its answer to a good one.
	refuse, ok func(w http.ResponseWriter, why string)

	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	bad    []string
}

func (f *fakeService) start(t *testing.T) {
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		why := ""
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			why = "want a POST of JSON, got " + r.Method + " " + r.Header.Get("Content-Type")
		} else if err := json.Unmarshal(raw, &body); err != nil {
			why = "body is not JSON: " + err.Error()
		} else {
			why = f.check(r, body)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if why != "" {
			f.bad = append(f.bad, why)
			f.refuse(w, why)
			return
		}
		f.bodies = append(f.bodies, body)
		f.ok(w, "")
	}))
	t.Cleanup(f.srv.Close)
}

func (f *fakeService) got() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.bodies...), append([]string(nil), f.bad...)
}

// str follows keys into nested JSON objects (and arrays, by index) and returns the string
// found there, "" when there is none.
func str(v any, path ...string) string {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	s, _ := v.(string)
	return s
}

func answer(status int, body string) func(w http.ResponseWriter, why string) {
	return func(w http.ResponseWriter, why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.ReplaceAll(body, "WHY", strconv.Quote(why)))
	}
}

const (
	dingSecret = "SECdingtalk-signing-secret"
	larkSecret = "lark-signing-secret"
	pdKey      = "R0UT1NGKEY0123456789abcdef012345"
)

// services are the fakes of the six services, each checking what its documentation asks.
// now is the sender's clock, against which the signatures' timestamps are checked.
func services(now func() time.Time) map[Kind]*fakeService {
	hmacB64 := func(key, msg string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(msg))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	title := func(s string) string {
		if !strings.Contains(s, "Sundial: job g/nightly") {
			return fmt.Sprintf("text %q does not name the job", s)
		}
		return ""
	}
	return map[Kind]*fakeService{
		// https://api.slack.com/messaging/webhooks: {"text": ..., "blocks": [...]}; 200 "ok".
		Slack: {check: func(r *http.Request, b map[string]any) string {
			if r.URL.Path != "/services/T000/B000/XXXX" {
				return "path " + r.URL.Path
			}
			if str(b, "blocks", "0", "type") != "header" || str(b, "blocks", "1", "text", "type") != "mrkdwn" {
				return "blocks: want a header and a mrkdwn section"
			}
			return title(str(b, "text"))
		}, ok: answer(200, `"ok"`), refuse: answer(400, `"invalid_payload"`)},
		// Teams workflow ("Post to a channel when a webhook request is received"): a
		// message with one Adaptive Card attachment.
		Teams: {check: func(r *http.Request, b map[string]any) string {
			if str(b, "type") != "message" || str(b, "attachments", "0", "contentType") != "application/vnd.microsoft.card.adaptive" {
				return "want a message with an adaptive card attachment"
			}
			card := b["attachments"].([]any)[0].(map[string]any)["content"]
			if str(card, "type") != "AdaptiveCard" || str(card, "version") == "" || str(card, "body", "0", "type") != "TextBlock" {
				return "want an AdaptiveCard with a version and TextBlocks"
			}
			return title(str(card, "body", "0", "text"))
		}, ok: answer(202, ``), refuse: answer(400, `{"error":WHY}`)},
		// DingTalk custom robot: POST /robot/send?access_token=...&timestamp=ms&sign=...,
		// sign = base64(HMAC-SHA256(secret, timestamp+"\n"+secret)); {"msgtype":"markdown",
		// "markdown":{"title","text"}}; it answers 200 with errcode, 310000 for a bad sign.
		DingTalk: {check: func(r *http.Request, b map[string]any) string {
			q := r.URL.Query()
			if r.URL.Path != "/robot/send" || q.Get("access_token") != "dingtoken" {
				return "want /robot/send?access_token=dingtoken"
			}
			ts := q.Get("timestamp")
			if want := strconv.FormatInt(now().UnixMilli(), 10); ts != want {
				return "timestamp " + ts + ", want " + want
			}
			if q.Get("sign") != hmacB64(dingSecret, ts+"\n"+dingSecret) {
				return "sign does not match"
			}
			if str(b, "msgtype") != "markdown" || str(b, "markdown", "title") == "" {
				return "want msgtype markdown with a title"
			}
			return title(str(b, "markdown", "text"))
		}, ok: answer(200, `{"errcode":0,"errmsg":"ok"}`), refuse: answer(200, `{"errcode":310000,"errmsg":WHY}`)},
		// Lark / Feishu custom bot: {"timestamp": seconds, "sign": base64(HMAC-SHA256(
		// timestamp+"\n"+secret, "")), "msg_type": "text", "content": {"text"}}; it answers
		// 200 with code, 19021 for a bad sign.
		Lark: {check: func(r *http.Request, b map[string]any) string {
			if r.URL.Path != "/open-apis/bot/v2/hook/larkhook" {
				return "path " + r.URL.Path
			}
			ts := str(b, "timestamp")
			if want := strconv.FormatInt(now().Unix(), 10); ts != want {
				return "timestamp " + ts + ", want " + want
			}
			if str(b, "sign") != hmacB64(ts+"\n"+larkSecret, "") {
				return "sign does not match"
			}
			if str(b, "msg_type") != "text" {
				return "want msg_type text"
			}
			return title(str(b, "content", "text"))
		}, ok: answer(200, `{"code":0,"msg":"success","data":{}}`), refuse: answer(200, `{"code":19021,"msg":WHY}`)},
		// WeCom group robot: POST /cgi-bin/webhook/send?key=...; {"msgtype":"markdown",
		// "markdown":{"content"}}; 200 with errcode.
		WeCom: {check: func(r *http.Request, b map[string]any) string {
			if r.URL.Path != "/cgi-bin/webhook/send" || r.URL.Query().Get("key") != "wecomkey" {
				return "want /cgi-bin/webhook/send?key=wecomkey"
			}
			if str(b, "msgtype") != "markdown" {
				return "want msgtype markdown"
			}
			return title(str(b, "markdown", "content"))
		}, ok: answer(200, `{"errcode":0,"errmsg":"ok"}`), refuse: answer(200, `{"errcode":93000,"errmsg":WHY}`)},
		// PagerDuty Events API v2: POST /v2/enqueue {"routing_key", "event_action":
		// "trigger"|"resolve", "dedup_key", "payload": {"summary", "source", "severity"}}
		// (payload for trigger only); 202.
		PagerDuty: {check: func(r *http.Request, b map[string]any) string {
			if r.URL.Path != "/v2/enqueue" || str(b, "routing_key") != pdKey || str(b, "dedup_key") == "" {
				return "want /v2/enqueue with the routing key and a dedup_key"
			}
			switch str(b, "event_action") {
			case "trigger":
				if str(b, "payload", "source") == "" || str(b, "payload", "severity") != "error" {
					return "want payload source and severity error"
				}
				return title(str(b, "payload", "summary"))
			case "resolve":
				return ""
			}
			return "event_action " + str(b, "event_action")
		}, ok: answer(202, `{"status":"success","message":"Event processed"}`), refuse: answer(400, `{"status":"invalid event","errors":[WHY]}`)},
	}
}

// channelTarget is the target naming f's fake of kind k.
func channelTarget(k Kind, f *fakeService) string {
	switch k {
	case Slack:
		return "slack:" + f.srv.URL + "/services/T000/B000/XXXX"
	case Teams:
		return "teams:" + f.srv.URL + "/workflows/abc/triggers/manual/paths/invoke?sig=teamssig"
	case DingTalk:
		return "dingtalk:" + f.srv.URL + "/robot/send?access_token=dingtoken#secret=" + dingSecret
	case Lark:
		return "feishu:" + f.srv.URL + "/open-apis/bot/v2/hook/larkhook#secret=" + larkSecret
	case WeCom:
		return "wecom:" + f.srv.URL + "/cgi-bin/webhook/send?key=wecomkey"
	}
	return "pagerduty:" + pdKey
}

// TestChannelPayloads: a failure of a job with one target of each service reaches each
// local fake with the body its service documents, signed where the service signs (the
// fakes check the signature as the service does), from targets the store keeps sealed;
// when the job succeeds again each hears that it recovered, PagerDuty as a resolve of the
// same dedup_key.
func TestChannelPayloads(t *testing.T) {
	ctx := context.Background()
	st := teststore.Open(t, "sqlite")
	keys := testKeys(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fakes := services(clk.Now)
	var targets []string
	for _, k := range channels {
		fakes[k].start(t)
		sealed, err := SealTarget(keys, channelTarget(k, fakes[k]))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sealed, "dingtoken") || strings.Contains(sealed, pdKey) || strings.Contains(sealed, larkSecret) {
			t.Fatalf("sealed target %q shows its secret", sealed)
		}
		targets = append(targets, sealed)
	}
	job := &store.Job{Group: "g", Name: "nightly", TargetKind: store.TargetLocal, Handler: "h", Enabled: true,
		Concurrency: store.ConcurrencyAllow, AlarmTargets: targets, AlarmPolicy: store.AlarmPolicy{Recovery: true}}
	if err := st.JobInsert(ctx, job); err != nil {
		t.Fatal(err)
	}
	pd := fakes[PagerDuty].srv.URL + "/v2/enqueue"
	s, err := New(Config{Store: st, Clock: clk, Secrets: keys, PagerDutyURL: pd, Attempts: 1, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	at := clk.Now().UnixMilli()
	for i, state := range []store.ExecutionState{store.ExecFailed, store.ExecSucceeded} {
		x := &store.Execution{JobID: job.ID, ScheduledAt: at + int64(i), FiredAt: at, FinishedAt: at, Cause: store.CauseAPI,
			State: state, HandleMsg: "exit 3", AlarmState: store.AlarmPending}
		if _, err := st.ExecutionsInsert(ctx, []*store.Execution{x}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Sweep(ctx)
		if err != nil || res != (Result{Sent: 1}) {
			t.Fatalf("sweep %d (%s) = %+v, %v; want one sent", i, state, res, err)
		}
	}
	for _, k := range channels {
		bodies, bad := fakes[k].got()
		if len(bad) > 0 {
			t.Errorf("%s refused: %v", k, bad)
		}
		if len(bodies) != 2 {
			t.Errorf("%s got %d requests, want 2 (failure, recovery)", k, len(bodies))
			continue
		}
		recovered, _ := json.Marshal(bodies[1])
		if k == PagerDuty {
			if str(bodies[1], "event_action") != "resolve" || str(bodies[1], "dedup_key") != str(bodies[0], "dedup_key") {
				t.Errorf("pagerduty: want a resolve of the trigger's dedup_key %q, got %s", str(bodies[0], "dedup_key"), recovered)
			}
		} else if !strings.Contains(string(recovered), "recovered") {
			t.Errorf("%s: the second message does not say the job recovered: %s", k, recovered)
		}
	}
}

// TestChannelRefusals: a service that refuses a message in its body with a 200 (DingTalk's
// errcode for a bad signature, Lark's code) is a failed delivery, and one that answers 400
// is not tried again.
func TestChannelRefusals(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	fakes := services(clk.Now)
	for _, k := range []Kind{DingTalk, Lark, Slack} {
		fakes[k].start(t)
	}
	ev := Event{Event: EventFailed, JobID: 7, JobGroup: "g", JobName: "nightly", ExecutionID: 1, State: "failed"}
	for _, tc := range []struct {
		target string
		want   string
	}{
		{"dingtalk:" + fakes[DingTalk].srv.URL + "/robot/send?access_token=dingtoken#secret=wrong", "code 310000"},
		{"lark:" + fakes[Lark].srv.URL + "/open-apis/bot/v2/hook/larkhook#secret=wrong", "code 19021"},
		{"slack:" + fakes[Slack].srv.URL + "/services/wrong", "400"},
	} {
		tg, err := ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		err = postChannel(ctx, http.DefaultClient, tg, ev, clk.Now())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %s", tg.Kind, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "dingtoken") {
			t.Errorf("%s: the error shows the URL's token: %v", tg.Kind, err)
		}
	}
}

// TestParseChannelTargets: each service's target form is read, its secret kept apart from
// its URL; bad ones are refused with a reason; the mask reads as a masked target.
func TestParseChannelTargets(t *testing.T) {
	for _, tc := range []struct {
		in     string
		kind   Kind
		addr   string
		secret string
		masked bool
		bad    bool
	}{
		{in: "slack:https://hooks.slack.com/services/T/B/X", kind: Slack, addr: "https://hooks.slack.com/services/T/B/X"},
		{in: "dingtalk:https://oapi.dingtalk.com/robot/send?access_token=t#secret=SECx", kind: DingTalk,
			addr: "https://oapi.dingtalk.com/robot/send?access_token=t", secret: "SECx"},
		{in: "feishu:https://open.feishu.cn/open-apis/bot/v2/hook/h#secret=s", kind: Lark, addr: "https://open.feishu.cn/open-apis/bot/v2/hook/h", secret: "s"},
		{in: "pagerduty:abc123", kind: PagerDuty, addr: PagerDutyEventsURL, secret: "abc123"},
		{in: "wecom:***", kind: WeCom, masked: true},
		{in: "slack:hooks.slack.com/x", bad: true},
		{in: "slack:https://hooks.slack.com/x#secret=s", bad: true}, // Slack has no signing secret
		{in: "teams:https://u:p@example.com/x", bad: true},
		{in: "pagerduty:", bad: true},
		{in: "pagerduty:a b", bad: true},
	} {
		got, err := ParseTarget(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseTarget(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.Kind != tc.kind || got.Address != tc.addr || got.Secret != tc.secret || got.Masked != tc.masked {
			t.Errorf("ParseTarget(%q) = %+v, %v", tc.in, got, err)
		}
	}
	keys := testKeys(t)
	raw := "pagerduty:abc123"
	sealed, err := SealTarget(keys, raw)
	if err != nil || !strings.HasPrefix(sealed, "pagerduty:sdl1:") {
		t.Fatalf("SealTarget = %q, %v", sealed, err)
	}
	if back, err := OpenTarget(keys, sealed); err != nil || back != raw {
		t.Errorf("OpenTarget = %q, %v; want %q", back, err, raw)
	}
	if m := MaskTarget(sealed); m != "pagerduty:***" {
		t.Errorf("MaskTarget = %q", m)
	}
	if m := MaskTarget("https://example.com/hook"); m != "https://example.com/hook" {
		t.Errorf("MaskTarget of a webhook = %q, want it as it is", m)
	}
}
