package alarm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// SMTP is the mail server alarms are sent through.
type SMTP struct {
	// Addr is host:port; empty disables e-mail (e-mail alarms then fail).
	Addr string
	// From is the sender address.
	From string
	// User and Password authenticate with PLAIN; empty User sends without authenticating.
	// net/smtp refuses PLAIN on an unencrypted connection to anything but localhost, so a
	// password never crosses the network in clear.
	User, Password string
}

// Event is what a webhook receives, as JSON; the e-mail says the same in words.
type Event struct {
	Event           string  `json:"event"` // "execution.failed", "execution.recovered", "job.alarm"
	Reason          string  `json:"reason,omitempty"`
	JobID           int64   `json:"job_id"`
	JobGroup        string  `json:"job_group"`
	JobName         string  `json:"job_name"`
	ExecutionID     int64   `json:"execution_id"`
	State           string  `json:"state"`
	Cause           string  `json:"cause"`
	Attempt         int     `json:"attempt"`
	TriggerID       int64   `json:"trigger_id,omitempty"`
	TriggerCode     int     `json:"trigger_code"`
	TriggerMsg      string  `json:"trigger_msg"`
	HandleCode      int     `json:"handle_code"`
	HandleMsg       string  `json:"handle_msg"`
	Node            string  `json:"node,omitempty"`
	ExecutorAddress string  `json:"executor_address,omitempty"`
	ScheduledAt     *string `json:"scheduled_at"`
	FiredAt         *string `json:"fired_at"`
	FinishedAt      *string `json:"finished_at"`
	// Failures, on job.paused, is how many failures in a row paused the job.
	Failures int `json:"failures,omitempty"`
}

// rfc3339 formats Unix milliseconds as RFC 3339 UTC with milliseconds; nil for 0 (never).
func rfc3339(ms int64) *string {
	if ms == 0 {
		return nil
	}
	s := time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	return &s
}

func eventOf(job *store.Job, x *store.Execution) Event {
	return Event{Event: EventFailed, JobID: job.ID, JobGroup: job.Group, JobName: job.Name, ExecutionID: x.ID,
		State: string(x.State), Cause: string(x.Cause), Attempt: x.Attempt, TriggerID: x.TriggerID,
		TriggerCode: x.TriggerCode, TriggerMsg: x.TriggerMsg, HandleCode: x.HandleCode, HandleMsg: x.HandleMsg,
		Node: x.Node, ExecutorAddress: x.ExecutorAddress,
		ScheduledAt: rfc3339(x.ScheduledAt), FiredAt: rfc3339(x.FiredAt), FinishedAt: rfc3339(x.FinishedAt)}
}

// errPermanent marks a delivery error that retrying cannot fix.
var errPermanent = errors.New("permanent")

// postWebhook POSTs the event. A 2xx answer is a delivery; the Idempotency-Key lets a
// receiver drop a repeat should one ever come (a node that died between the receiver's
// answer and recording it sent does not send again, but a proxy may retry).
func postWebhook(ctx context.Context, client *http.Client, url string, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w: %w", url, err, errPermanent)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sundial-alarm")
	key := "sundial-execution-" + strconv.FormatInt(ev.ExecutionID, 10)
	if ev.Event == EventRaised {
		key = "sundial-job-" + strconv.FormatInt(ev.JobID, 10) + "-raised-" + strconv.FormatInt(ev.ExecutionID, 10)
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: status %s", url, resp.Status)
	}
	return nil
}

// sendMail sends one message to one recipient, so one bad address cannot make the server
// refuse the others' copies. It uses STARTTLS when the server offers it.
func sendMail(ctx context.Context, cfg SMTP, to string, ev Event, date time.Time) error {
	if cfg.Addr == "" {
		return fmt.Errorf("e-mail to %s: no SMTP server is configured (sundial server --smtp-addr): %w", to, errPermanent)
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return fmt.Errorf("SMTP server %q: %w: %w", cfg.Addr, err, errPermanent)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("e-mail to %s: %w", to, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("e-mail to %s via %s: %w", to, cfg.Addr, err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return fmt.Errorf("e-mail to %s via %s: STARTTLS: %w", to, cfg.Addr, err)
		}
	}
	if cfg.User != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.User, cfg.Password, host)); err != nil {
			return fmt.Errorf("e-mail to %s via %s: authenticate as %s: %w", to, cfg.Addr, cfg.User, err)
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return fmt.Errorf("e-mail to %s via %s: MAIL FROM %s: %w", to, cfg.Addr, cfg.From, err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("e-mail to %s via %s: RCPT TO: %w", to, cfg.Addr, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("e-mail to %s via %s: DATA: %w", to, cfg.Addr, err)
	}
	if _, err := w.Write(message(cfg.From, to, ev, date)); err != nil {
		return fmt.Errorf("e-mail to %s via %s: %w", to, cfg.Addr, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("e-mail to %s via %s: end of DATA: %w", to, cfg.Addr, err)
	}
	// The message is accepted once DATA ends; a failed QUIT does not make it unsent.
	_ = c.Quit()
	return nil
}

// oneLine keeps a value that goes into a header on one line, so a job name cannot add
// headers.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func message(from, to string, ev Event, date time.Time) []byte {
	if ev.Event == EventRecovered || ev.Event == EventRaised || ev.Event == EventPaused {
		return shortMessage(from, to, ev, date)
	}
	subject := fmt.Sprintf("Sundial: job %s/%s %s (execution %d)", ev.JobGroup, ev.JobName, ev.State, ev.ExecutionID)
	var b bytes.Buffer
	writeHeader(&b, from, to, subject, ev, date)
	when := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	lines := []string{
		fmt.Sprintf("Job %s/%s (id %d) %s, for good: no retry is left.", ev.JobGroup, ev.JobName, ev.JobID, ev.State),
	}
	if ev.Reason != "" {
		lines = append(lines, ev.Reason)
	}
	lines = append(lines, "",
		fmt.Sprintf("Execution:  %d, attempt %d, cause %s", ev.ExecutionID, ev.Attempt, ev.Cause),
		fmt.Sprintf("State:      %s (code %d)", ev.State, ev.HandleCode),
		fmt.Sprintf("Scheduled:  %s", when(ev.ScheduledAt)),
		fmt.Sprintf("Fired:      %s", when(ev.FiredAt)),
		fmt.Sprintf("Finished:   %s", when(ev.FinishedAt)))
	if ev.Node != "" {
		lines = append(lines, "Node:       "+ev.Node)
	}
	if ev.ExecutorAddress != "" {
		lines = append(lines, "Executor:   "+ev.ExecutorAddress)
	}
	if ev.TriggerMsg != "" {
		lines = append(lines, "", "Dispatch:", ev.TriggerMsg)
	}
	lines = append(lines, "", "Result:", ev.HandleMsg)
	writeBody(&b, lines)
	return b.Bytes()
}

// shortMessage is the e-mail of a recovery or of an alarm raised with a reason: the
// channels' words.
func shortMessage(from, to string, ev Event, date time.Time) []byte {
	m := messageOf(ev)
	var b bytes.Buffer
	writeHeader(&b, from, to, m.Title, ev, date)
	writeBody(&b, m.Lines)
	return b.Bytes()
}

func writeHeader(b *bytes.Buffer, from, to, subject string, ev Event, date time.Time) {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	fmt.Fprintf(b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <sundial-%d-%s@sundial>\r\n",
		from, to, mime.QEncoding.Encode("utf-8", oneLine(subject)), date.Format(time.RFC1123Z), ev.ExecutionID, hex.EncodeToString(id))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
}

func writeBody(b *bytes.Buffer, lines []string) {
	for _, l := range lines {
		// Bare CR or LF in a message body is not allowed by SMTP; normalise to CRLF.
		l = strings.ReplaceAll(strings.ReplaceAll(l, "\r\n", "\n"), "\r", "\n")
		b.WriteString(strings.ReplaceAll(l, "\n", "\r\n"))
		b.WriteString("\r\n")
	}
}
