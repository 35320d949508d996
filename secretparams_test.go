package sundial_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

func ring(t *testing.T, id string, fill byte) *secret.Keyring {
	t.Helper()
	k := make([]byte, secret.KeyLen)
	for i := range k {
		k[i] = fill
	}
	r, err := secret.Parse(id + ":" + base64.StdEncoding.EncodeToString(k))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSecretParamsWrongKey: a node whose key does not open a job's secret params (another
// key under the same id, or no key at all) fails the fire with a message that says so, and
// never runs the handler with garbage.
func TestSecretParamsWrongKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys *secret.Keyring
		want string
	}{
		{"other key, same id", ring(t, "k1", 9), `key "k1": it does not open`},
		{"no key", nil, "no secret key is configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := teststore.Open(t, "sqlite")
			ctx := context.Background()
			writer, err := sundial.New(sundial.Config{Store: st, Secrets: ring(t, "k1", 7)})
			if err != nil {
				t.Fatal(err)
			}
			id, err := writer.ScheduleJob(ctx, sundial.Job{Name: "s", Handler: "grab", Params: "pw=hunter2", ParamsSecret: true})
			if err != nil {
				t.Fatal(err)
			}
			runner, err := sundial.New(sundial.Config{Store: st, Secrets: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan string, 1)
			runner.Register("grab", func(ctx context.Context) error {
				ran <- sundial.ExecutionFrom(ctx).Params
				return nil
			})
			if err := runner.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer runner.Stop(ctx)
			if _, err := runner.TriggerNow(ctx, id); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for {
				xs, err := st.ExecutionList(ctx, store.ExecutionFilter{JobID: id, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(xs) == 1 && xs[0].State.Terminal() {
					x := xs[0]
					if x.State != store.ExecFailed || !strings.Contains(x.HandleMsg+x.TriggerMsg, tc.want) {
						t.Fatalf("execution %s: trigger msg %q handle msg %q, want failed with %q", x.State, x.TriggerMsg, x.HandleMsg, tc.want)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the fire did not end: %+v", xs)
				}
				time.Sleep(20 * time.Millisecond)
			}
			select {
			case p := <-ran:
				t.Fatalf("the handler ran with params %q", p)
			default:
			}
		})
	}
}
