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
