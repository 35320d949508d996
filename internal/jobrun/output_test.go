package jobrun

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOutputHandlerFormat(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
		times []time.Time
	)
	log := slog.New(NewOutputHandler(func(at time.Time, line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
		times = append(times, at)
	}))
	log.Info("plain")
	log.Warn("disk", "free", 12, "path", "/var/lib x", "empty", "")
	log.With("shard", 2).WithGroup("req").Error("boom", "id", 7, slog.Group("peer", "host", "a=b"))
	log.Debug("detail", slog.Group("", "inline", true))
	want := []string{
		"plain",
		`WARN disk free=12 path="/var/lib x" empty=""`,
		`ERROR boom shard=2 req.id=7 req.peer.host="a=b"`,
		"DEBUG detail inline=true",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i, at := range times {
		if at.IsZero() {
			t.Errorf("line %d: no time, want the record's", i)
		}
	}
}

func TestContextAccessors(t *testing.T) {
	type runA struct{ id int }
	type runB struct{ id int }
	ctx := WithRun(context.Background(), runA{1})
	ctx = WithRun(ctx, &runB{2})
	if a, ok := RunFrom[runA](ctx); !ok || a.id != 1 {
		t.Errorf("RunFrom[runA] = %v %v", a, ok)
	}
	if b, ok := RunFrom[*runB](ctx); !ok || b.id != 2 {
		t.Errorf("RunFrom[*runB] = %v %v", b, ok)
	}
	if _, ok := RunFrom[runB](ctx); ok {
		t.Error("RunFrom[runB] found a run of another type")
	}
	if _, ok := LoggerFrom(ctx); ok {
		t.Error("LoggerFrom found a logger that was never set")
	}
	l := slog.New(slog.DiscardHandler)
	if got, ok := LoggerFrom(WithLogger(ctx, l)); !ok || got != l {
		t.Error("LoggerFrom did not return the logger set")
	}
}

func TestIdempotencyKey(t *testing.T) {
	k := IdempotencyKey(7, 42, 1732230000000, 1)
	if k != "j7-t42-1732230000000-s1" {
		t.Fatalf("key %q", k)
	}
	for _, other := range []string{
		IdempotencyKey(8, 42, 1732230000000, 1), IdempotencyKey(7, 43, 1732230000000, 1),
		IdempotencyKey(7, 42, 1732230000001, 1), IdempotencyKey(7, 42, 1732230000000, 0),
	} {
		if other == k {
			t.Errorf("%q: another fire has the same key", other)
		}
	}
}
