package server

import (
	"log/slog"
	"testing"
)

// TestRequestLogLevel: an operator's info log has what people asked of the API, not the
// executors' per-second protocol or the scrapes, and every server error.
func TestRequestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		path   string
		status int
		want   slog.Level
	}{
		{"/api/v1/jobs", 201, slog.LevelInfo},
		{"/api/v1/jobs/7", 404, slog.LevelInfo},
		{"/api/v1/executor/register", 200, slog.LevelDebug},
		{"/api/v1/executor/results", 200, slog.LevelDebug},
		{"/api/v1/executor/logs", 204, slog.LevelDebug},
		{"/metrics", 200, slog.LevelDebug},
		{"/healthz", 200, slog.LevelDebug},
		{"/api/v1/executor/results", 503, slog.LevelWarn},
		{"/api/v1/jobs", 500, slog.LevelWarn},
	} {
		if got := requestLogLevel(tc.path, tc.status); got != tc.want {
			t.Errorf("%s %d: logged at %s, want %s", tc.path, tc.status, got, tc.want)
		}
	}
}
