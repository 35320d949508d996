package alarm

import (
	"strings"
	"testing"
	"time"
)

// A job name cannot add headers to an alarm e-mail, and the body's lines end in CRLF.
func TestMessageHeaders(t *testing.T) {
	fin := "2024-03-10T01:02:03.004Z"
	msg := string(message("sundial@example.com", "ops@example.com", Event{JobGroup: "g", JobName: "x\r\nBcc: evil@example.com",
		ExecutionID: 7, State: "failed", HandleMsg: "line one\nline two", FinishedAt: &fin}, time.Date(2024, 3, 10, 1, 2, 4, 0, time.UTC)))
	head, body, ok := strings.Cut(msg, "\r\n\r\n")
	if !ok {
		t.Fatalf("no header/body split:\n%q", msg)
	}
	for _, l := range strings.Split(head, "\r\n") {
		if strings.HasPrefix(l, "Bcc:") {
			t.Errorf("the job name added a header: %q", head)
		}
	}
	if !strings.Contains(head, "Date: Sun, 10 Mar 2024 01:02:04 +0000") {
		t.Errorf("date (the sender's clock):\n%s", head)
	}
	if !strings.Contains(head, "Subject: Sundial: job g/x Bcc: evil@example.com failed (execution 7)") {
		t.Errorf("subject:\n%s", head)
	}
	if strings.Contains(strings.ReplaceAll(body, "\r\n", ""), "\n") || !strings.Contains(body, "line one\r\nline two\r\n") ||
		!strings.Contains(body, fin) {
		t.Errorf("body:\n%q", body)
	}
}

// A recovery e-mail says the job recovered; a raised alarm's e-mail carries its reason.
func TestShortMessages(t *testing.T) {
	date := time.Date(2024, 3, 10, 1, 2, 4, 0, time.UTC)
	rec := string(message("s@example.com", "ops@example.com", Event{Event: EventRecovered, JobID: 4, JobGroup: "g", JobName: "x",
		ExecutionID: 9, State: "succeeded"}, date))
	if !strings.Contains(rec, "Subject: Sundial: job g/x recovered\r\n") || !strings.Contains(rec, "succeeded again (execution 9)") {
		t.Errorf("recovery e-mail:\n%s", rec)
	}
	raised := string(message("s@example.com", "ops@example.com", Event{Event: EventRaised, JobID: 4, JobGroup: "g", JobName: "x",
		Reason: "paused itself after 5 failures"}, date))
	if !strings.Contains(raised, "needs attention") || !strings.Contains(raised, "paused itself after 5 failures") {
		t.Errorf("raised e-mail:\n%s", raised)
	}
}
