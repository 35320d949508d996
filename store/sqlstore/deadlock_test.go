package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRetryDeadlock: a transaction the database broke as a deadlock runs again, up to five
// times; any other error, or a deadlock inside the caller's transaction, ends it at once.
func TestRetryDeadlock(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadlock := &pgconn.PgError{Code: "40P01"}
	other := errors.New("other")
	for _, c := range []struct {
		name  string
		fails []error // what the attempts return, in turn; nil after them
		calls int
		want  error
	}{
		{"two deadlocks", []error{deadlock, deadlock}, 3, nil},
		{"five deadlocks", []error{deadlock, deadlock, deadlock, deadlock, deadlock, deadlock}, 5, deadlock},
		{"another error", []error{other, deadlock}, 1, other},
	} {
		calls := 0
		err := st.retryDeadlock(ctx, func(*executor) error {
			calls++
			if calls <= len(c.fails) {
				return c.fails[calls-1]
			}
			return nil
		})
		if calls != c.calls || !errors.Is(err, c.want) {
			t.Errorf("%s: %d calls, %v; want %d, %v", c.name, calls, err, c.calls, c.want)
		}
	}
	calls := 0
	err = st.inTx(ctx, func(e *executor) error {
		return e.retryDeadlock(ctx, func(*executor) error { calls++; return deadlock })
	})
	if calls != 1 || !errors.Is(err, deadlock) {
		t.Errorf("inside a transaction: %d calls, %v; want 1, the deadlock", calls, err)
	}
}
