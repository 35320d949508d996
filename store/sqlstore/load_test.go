package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestLoadTriggers bulk-loads triggers on every database (COPY on PostgreSQL, multi-row
// INSERTs spanning several statements elsewhere) and reads them back through the store: every
// row there once, with the fields it was given; and the due triggers' lock is planned on the
// due index.
func TestLoadTriggers(t *testing.T) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			st := openMigrated(t, testdb.DSN(t, dialect)).(*sqlstore.Store)
			job := &store.Job{Group: "g", Name: "load", TargetKind: store.TargetLocal, Handler: "noop", Enabled: true}
			if err := store.InTx(ctx, st, func(q store.Querier) error { return q.JobInsert(ctx, job) }); err != nil {
				t.Fatal(err)
			}
			const n = 1234 // more than one 500-row statement
			err := st.LoadTriggers(ctx, n, func(i int) store.Trigger {
				return store.Trigger{JobID: job.ID, Group: "load", Name: fmt.Sprintf("t%d", i), Kind: store.TriggerSimple,
					Spec: "x", TimeZone: "UTC", StartAt: int64(i), NextFireAt: 1000 + int64(i), MisfirePolicy: "smart"}
			})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			var after int64
			for {
				page, err := st.TriggerList(ctx, store.TriggerFilter{JobID: job.ID, AfterID: after, Limit: 500})
				if err != nil {
					t.Fatal(err)
				}
				for _, tr := range page {
					seen[tr.Name] = true
				}
				if len(page) < 500 {
					break
				}
				after = page[len(page)-1].ID
			}
			if len(seen) != n {
				t.Fatalf("%d triggers read back, want %d", len(seen), n)
			}
			got, err := st.TriggerGetByKey(ctx, "load", "t1233")
			if err != nil {
				t.Fatal(err)
			}
			if got.NextFireAt != 2233 || got.StartAt != 1233 || got.State != store.TriggerWaiting ||
				got.Priority != store.DefaultPriority || got.Version != 1 || got.Spec != "x" || got.MisfirePolicy != "smart" {
				t.Errorf("loaded trigger %+v", got)
			}
			due, err := st.TriggersLockDue(ctx, 1002, 10)
			if err != nil || len(due) != 3 {
				t.Errorf("due by 1002: %d triggers, %v: want 3", len(due), err)
			}
			plan, err := st.ExplainLockDue(ctx, 1002, 10)
			if err != nil || !strings.Contains(plan, "triggers_due_idx") {
				t.Errorf("plan %q, %v: want the due index", plan, err)
			}
		})
	}
}
