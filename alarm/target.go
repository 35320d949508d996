// Package alarm tells people when a job fails for good: it delivers the pending alarms of
// failed executions by e-mail (SMTP) and webhook (an HTTP POST of JSON), each exactly once.
// It is a leader duty of the server, with its own Start/Stop.
package alarm

import (
	"fmt"
	"net/mail"
	"net/url"
	"strings"

	"github.com/sundial-scheduler/sundial/secret"
)

// Kind is how a target is told.
type Kind string

// The target kinds.
const (
	Email   Kind = "email"
	Webhook Kind = "webhook"
)

// Target is one parsed alarm target.
type Target struct {
	Kind Kind
	// Address is the bare e-mail address or the webhook URL (a channel's URL without its
	// "#secret=" fragment; PagerDuty's events URL).
	Address string
	// Secret is a channel's signing secret (DingTalk, Lark) or PagerDuty's routing key.
	Secret string
	// Masked is a channel target read back from the API ("slack:***"): it stands for the
	// stored target it masks, which an update keeps.
	Masked bool
}

// ParseTarget reads an alarm target: "mailto:ops@example.com" or "ops@example.com" for an
// e-mail, an http:// or https:// URL for a webhook, or a chat or paging service:
// "slack:URL", "teams:URL", "dingtalk:URL[#secret=SEC...]", "lark:URL[#secret=...]" (or
// "feishu:"), "wecom:URL", "pagerduty:ROUTING_KEY". "slack:***" is a channel target as the
// API shows it (Masked).
func ParseTarget(s string) (Target, error) {
	if k, rest, ok := channelScheme(s); ok {
		if rest == secret.Mask {
			return Target{Kind: k, Masked: true}, nil
		}
		return parseChannel(k, rest)
	}
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		u, err := url.Parse(s)
		if err != nil {
			return Target{}, fmt.Errorf("webhook %q: %w", s, err)
		}
		if u.Host == "" {
			return Target{}, fmt.Errorf("webhook %q: the URL has no host", s)
		}
		if u.User != nil {
			// Targets are shown to everyone who may read the job; a password there would leak.
			return Target{}, fmt.Errorf("webhook %q: credentials in the URL are not allowed (put a secret in the path or query)", redact(u))
		}
		return Target{Kind: Webhook, Address: s}, nil
	}
	bad := fmt.Errorf("alarm target %q: want an e-mail address (ops@example.com or mailto:ops@example.com), an http(s):// webhook URL, or slack:, teams:, dingtalk:, lark:, wecom: with the service's URL or pagerduty:ROUTING_KEY", s)
	// One bare address: a display name, a list or header syntax would not survive as an
	// SMTP recipient.
	addr := strings.TrimPrefix(s, "mailto:")
	if addr == "" || strings.ContainsAny(addr, "<>,;\"() \t\r\n") {
		return Target{}, bad
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr {
		return Target{}, bad
	}
	if domain := addr[strings.LastIndex(addr, "@")+1:]; !strings.Contains(domain, ".") && domain != "localhost" {
		return Target{}, bad // "ops@example" is a typo far more often than a local domain
	}
	return Target{Kind: Email, Address: addr}, nil
}

// ParseTargets parses every target; the error names the index and value of the first bad one.
func ParseTargets(ss []string) ([]Target, error) {
	out := make([]Target, len(ss))
	for i, s := range ss {
		t, err := ParseTarget(s)
		if err != nil {
			return nil, &TargetError{Index: i, Value: s, Err: err}
		}
		out[i] = t
	}
	return out, nil
}

// TargetError is a bad target in a list.
type TargetError struct {
	Index int
	Value string
	Err   error
}

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

func redact(u *url.URL) string {
	c := *u
	c.User = url.User("xxxxx")
	return c.String()
}

// SealTarget is what the store keeps of a target: a channel target's part after its scheme
// sealed under keys' primary key ("slack:sdl1:..."), as every one carries a secret; other
// targets as they are.
func SealTarget(keys *secret.Keyring, raw string) (string, error) {
	k, rest, ok := channelScheme(raw)
	if !ok {
		return raw, nil
	}
	sealed, err := keys.SealFor(rest, string(k))
	if err != nil {
		return "", fmt.Errorf("%s target: %w", k, err)
	}
	return string(k) + ":" + sealed, nil
}

// OpenTarget is the target a stored one (SealTarget) stands for.
func OpenTarget(keys *secret.Keyring, stored string) (string, error) {
	k, rest, ok := channelScheme(stored)
	if !ok {
		return stored, nil
	}
	plain, err := keys.OpenFor(rest, string(k))
	if err != nil {
		return "", fmt.Errorf("%s target: %w", k, err)
	}
	return string(k) + ":" + plain, nil
}

// MaskTarget is a stored target as the API, the CLI and the console show it: a channel
// target as "slack:***", others as they are.
func MaskTarget(stored string) string {
	if k, _, ok := channelScheme(stored); ok {
		return string(k) + ":" + secret.Mask
	}
	return stored
}

// TargetKeyID is the id of the key a stored chat or paging target is sealed under; ok is
// false for a target that is not sealed.
func TargetKeyID(stored string) (string, bool) {
	if _, rest, ok := channelScheme(stored); ok {
		return secret.KeyID(rest)
	}
	return "", false
}
