package alarm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The chat and paging services a target can name with a scheme ("slack:https://...").
// Each gets the payload its service documents, not the generic webhook's event.
const (
	Slack     Kind = "slack"     // Slack incoming webhook: text and mrkdwn blocks
	Teams     Kind = "teams"     // Microsoft Teams workflow webhook: an Adaptive Card
	DingTalk  Kind = "dingtalk"  // DingTalk group robot: markdown, signed when it has a secret
	Lark      Kind = "lark"      // Lark / Feishu custom bot: text, signed when it has a secret
	WeCom     Kind = "wecom"     // WeCom (WeChat Work) group robot: markdown
	PagerDuty Kind = "pagerduty" // PagerDuty Events API v2: trigger and resolve by dedup_key
)

// channels are the kinds a scheme names; every one of them carries a secret (a token in
// its URL, a signing secret or a routing key), so the store keeps them sealed.
var channels = []Kind{Slack, Teams, DingTalk, Lark, WeCom, PagerDuty}

// feishu is Lark's name in mainland China; "feishu:" is read as "lark:".
const feishu = "feishu"

// PagerDutyEventsURL is where PagerDuty's Events API v2 takes events.
const PagerDutyEventsURL = "https://events.pagerduty.com/v2/enqueue"

// IsChannel reports whether k is one of the chat or paging services.
func IsChannel(k Kind) bool {
	for _, c := range channels {
		if c == k {
			return true
		}
	}
	return false
}

// channelScheme splits "slack:rest" into its kind and rest; ok is false when s does not
// start with a channel's scheme.
func channelScheme(s string) (k Kind, rest string, ok bool) {
	scheme, rest, found := strings.Cut(s, ":")
	if !found {
		return "", "", false
	}
	if scheme == feishu {
		scheme = string(Lark)
	}
	if !IsChannel(Kind(scheme)) {
		return "", "", false
	}
	return Kind(scheme), rest, true
}

// parseChannel reads the part after a channel's scheme: the service's webhook URL (with
// "#secret=..." for a signing secret where the service has one), or PagerDuty's routing key.
func parseChannel(k Kind, rest string) (Target, error) {
	if k == PagerDuty {
		if rest == "" || len(rest) > 128 || strings.ContainsAny(rest, " \t\r\n/?#") {
			return Target{}, fmt.Errorf("pagerduty target: want pagerduty:ROUTING_KEY (the integration key of an Events API v2 integration)")
		}
		return Target{Kind: k, Address: PagerDutyEventsURL, Secret: rest}, nil
	}
	u, err := url.Parse(rest)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("%s target: want %s:https://... (the service's webhook URL)", k, k)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("%s target: credentials in the URL are not allowed", k)
	}
	t := Target{Kind: k}
	if u.Fragment != "" {
		sec, ok := strings.CutPrefix(u.Fragment, "secret=")
		if !ok || sec == "" || (k != DingTalk && k != Lark) {
			return Target{}, fmt.Errorf("%s target: the URL's fragment may only be #secret=... (a DingTalk or Lark signing secret)", k)
		}
		t.Secret = sec
		u.Fragment, u.RawFragment = "", ""
	}
	t.Address = u.String()
	return t, nil
}

// Message is what a chat or paging service is told, in words.
type Message struct {
	Title string
	// Lines are the body, one fact a line.
	Lines []string
	// Recovered is a recovery notice: PagerDuty resolves the incident instead.
	Recovered bool
	// DedupKey names the job's incident at PagerDuty: its trigger and its resolve carry the same.
	DedupKey string
	Source   string
}

// messageOf says ev in words.
func messageOf(ev Event) Message {
	m := Message{DedupKey: "sundial-job-" + strconv.FormatInt(ev.JobID, 10), Source: "sundial"}
	if ev.Node != "" {
		m.Source = ev.Node
	}
	job := ev.JobGroup + "/" + ev.JobName
	switch ev.Event {
	case EventRecovered:
		m.Recovered = true
		m.Title = fmt.Sprintf("Sundial: job %s recovered", job)
		m.Lines = []string{fmt.Sprintf("Job %s (id %d) succeeded again (execution %d).", job, ev.JobID, ev.ExecutionID)}
	case EventPaused:
		m.Title = fmt.Sprintf("Sundial: job %s paused after %d failures", job, ev.Failures)
		m.Lines = []string{fmt.Sprintf("Job %s (id %d) paused itself after %d failures in a row; it fires no more until resumed.", job, ev.JobID, ev.Failures), ev.Reason}
		if ev.HandleMsg != "" {
			m.Lines = append(m.Lines, "Last result: "+clip(ev.HandleMsg, 1000))
		}
	case EventRaised:
		m.Title = fmt.Sprintf("Sundial: job %s needs attention", job)
		m.Lines = []string{fmt.Sprintf("Job %s (id %d): %s", job, ev.JobID, ev.Reason)}
	default:
		m.Title = fmt.Sprintf("Sundial: job %s %s (execution %d)", job, ev.State, ev.ExecutionID)
		m.Lines = []string{fmt.Sprintf("Job %s (id %d) %s, attempt %d, cause %s.", job, ev.JobID, ev.State, ev.Attempt, ev.Cause)}
		if ev.Reason != "" {
			m.Lines = append(m.Lines, ev.Reason)
		}
		if ev.HandleMsg != "" {
			m.Lines = append(m.Lines, "Result: "+clip(ev.HandleMsg, 1000))
		}
	}
	return m
}

// clip keeps a message within what chat services show (DingTalk and WeCom cap a markdown
// message at 4096 bytes).
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// channelRequest builds the service's request for m: its URL (DingTalk's signed one) and
// its JSON body.
func channelRequest(t Target, m Message, now time.Time) (string, any, error) {
	text := strings.Join(m.Lines, "\n")
	switch t.Kind {
	case Slack:
		// Slack shows text in notifications and blocks in the channel.
		return t.Address, map[string]any{
			"text": m.Title + "\n" + text,
			"blocks": []any{
				map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": clip(m.Title, 150)}},
				map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": clip(text, 3000)}},
			},
		}, nil
	case Teams:
		body := []any{map[string]any{"type": "TextBlock", "text": m.Title, "weight": "Bolder", "size": "Medium", "wrap": true}}
		for _, l := range m.Lines {
			body = append(body, map[string]any{"type": "TextBlock", "text": l, "wrap": true})
		}
		return t.Address, map[string]any{
			"type": "message",
			"attachments": []any{map[string]any{
				"contentType": "application/vnd.microsoft.card.adaptive",
				"contentUrl":  nil,
				"content": map[string]any{
					"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
					"type":    "AdaptiveCard", "version": "1.4", "body": body,
				},
			}},
		}, nil
	case DingTalk:
		addr := t.Address
		if t.Secret != "" {
			ts, sign := DingTalkSign(t.Secret, now)
			u, err := url.Parse(addr)
			if err != nil {
				return "", nil, err
			}
			q := u.Query()
			q.Set("timestamp", ts)
			q.Set("sign", sign)
			u.RawQuery = q.Encode()
			addr = u.String()
		}
		return addr, map[string]any{"msgtype": "markdown",
			"markdown": map[string]any{"title": m.Title, "text": clip("### "+m.Title+"\n\n"+strings.Join(m.Lines, "\n\n"), 4000)}}, nil
	case Lark:
		body := map[string]any{"msg_type": "text", "content": map[string]any{"text": m.Title + "\n" + text}}
		if t.Secret != "" {
			ts, sign := LarkSign(t.Secret, now)
			body["timestamp"], body["sign"] = ts, sign
		}
		return t.Address, body, nil
	case WeCom:
		return t.Address, map[string]any{"msgtype": "markdown",
			"markdown": map[string]any{"content": clip("**"+m.Title+"**\n"+text, 4000)}}, nil
	case PagerDuty:
		if m.Recovered {
			return t.Address, map[string]any{"routing_key": t.Secret, "event_action": "resolve", "dedup_key": m.DedupKey}, nil
		}
		return t.Address, map[string]any{"routing_key": t.Secret, "event_action": "trigger", "dedup_key": m.DedupKey,
			"payload": map[string]any{"summary": clip(m.Title, 1024), "source": m.Source, "severity": "error",
				"component": "sundial", "custom_details": map[string]any{"details": text}}}, nil
	}
	return "", nil, fmt.Errorf("%s is not a chat or paging service", t.Kind)
}

// DingTalkSign signs a DingTalk robot request: the timestamp in milliseconds and the
// base64 HMAC-SHA256, keyed by the secret, of "timestamp\nsecret" (DingTalk's robot
// security setting "加签"). The caller puts both in the query.
func DingTalkSign(secretKey string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secretKey))
	mac.Write([]byte(timestamp + "\n" + secretKey))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// LarkSign signs a Lark / Feishu custom bot request: the timestamp in seconds and the
// base64 HMAC-SHA256, keyed by "timestamp\nsecret", of nothing. Both go in the body.
func LarkSign(secretKey string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secretKey))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// postChannel tells a chat or paging service. Chat services answer 200 even when they
// refuse a message, with the error in the body, so the body is read: DingTalk and WeCom
// say errcode, Lark code (StatusCode on older bots); anything but 0 is a failure.
func postChannel(ctx context.Context, client *http.Client, t Target, ev Event, now time.Time) error {
	addr, payload, err := channelRequest(t, messageOf(ev), now)
	if err != nil {
		return fmt.Errorf("%s target: %w: %w", t.Kind, err, errPermanent)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("%s target: %w: %w", t.Kind, err, errPermanent)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, addr, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s target: %w: %w", t.Kind, err, errPermanent)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "sundial-alarm")
	resp, err := client.Do(req)
	if err != nil {
		// The URL carries the service's token: say the host only.
		return fmt.Errorf("%s target %s: %w", t.Kind, hostOf(t.Address), unwrapURLError(err))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("%s target %s: status %s: %s", t.Kind, hostOf(t.Address), resp.Status, clip(string(answer), 200))
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden {
			return fmt.Errorf("%w: %w", err, errPermanent) // a bad payload, key or URL: trying again cannot help
		}
		return err
	}
	var code struct {
		ErrCode    *int   `json:"errcode"`
		ErrMsg     string `json:"errmsg"`
		Code       *int   `json:"code"`
		Msg        string `json:"msg"`
		StatusCode *int   `json:"StatusCode"`
	}
	if json.Unmarshal(answer, &code) == nil {
		for _, c := range []struct {
			n   *int
			msg string
		}{{code.ErrCode, code.ErrMsg}, {code.Code, code.Msg}, {code.StatusCode, ""}} {
			if c.n != nil && *c.n != 0 {
				return fmt.Errorf("%s target %s: the service refused the message: code %d %s", t.Kind, hostOf(t.Address), *c.n, c.msg)
			}
		}
	}
	return nil
}

func hostOf(addr string) string {
	if u, err := url.Parse(addr); err == nil {
		return u.Host
	}
	return "?"
}

// unwrapURLError drops the URL (and its token) that net/http puts in its errors.
func unwrapURLError(err error) error {
	var ue *url.Error
	if e, ok := err.(*url.Error); ok {
		ue = e
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
