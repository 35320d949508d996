package server

import (
	"context"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// TestOutputAppendedTogether: the output of several executors' requests is appended in one
// transaction, each request's lines to its own execution; when the store refuses one of them
// (PostgreSQL refuses a NUL in text), the others are still appended, each alone, and only the
// refused request gets the error (its executor keeps its lines and sends them again).
func TestOutputAppendedTogether(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		lines := func(msgs ...string) []store.LogLine {
			out := make([]store.LogLine, len(msgs))
			for i, m := range msgs {
				out[i] = store.LogLine{Line: int64(i + 1), At: 1000, Message: m}
			}
			return out
		}
		errs, err := e.srv.appendLogs(ctx, []logAppend{{101, lines("a1", "a2")}, {102, lines("b1")}, {103, lines("c1", "c2", "c3")}})
		if err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
		}
		for id, want := range map[int64]int{101: 2, 102: 1, 103: 3} {
			got, err := e.st.ExecutionLogList(ctx, id, 0, 100)
			if err != nil || len(got) != want {
				t.Errorf("execution %d: %d lines, %v; want %d", id, len(got), err, want)
			}
		}
		if dialect != "postgres" {
			return
		}
		errs, err = e.srv.appendLogs(ctx, []logAppend{{201, lines("fine")}, {202, lines("bad\x00byte")}, {203, lines("fine too")}})
		if err != nil || len(errs) != 3 || errs[0] != nil || errs[1] == nil || errs[2] != nil {
			t.Fatalf("a batch with one refused request: %v, %v; want only the second to fail", errs, err)
		}
		for _, id := range []int64{201, 203} {
			if got, err := e.st.ExecutionLogList(ctx, id, 0, 100); err != nil || len(got) != 1 {
				t.Errorf("execution %d beside the refused one: %d lines, %v", id, len(got), err)
			}
		}
	})
}
