package sundial_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/alarm"
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

// TestResealSecrets: after a new key is put first, resealing moves every secret to it, so
// the old key can be dropped; a secret under a key the ring lacks is counted, not lost.
func TestResealSecrets(t *testing.T) {
	st := teststore.Open(t, "sqlite")
	ctx := context.Background()
	old := ring(t, "k1", 7)
	s, err := sundial.New(sundial.Config{Store: st, Secrets: old})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.ScheduleJob(ctx, sundial.Job{Name: "s", Handler: "noop", Params: "pw=hunter2", ParamsSecret: true})
	if err != nil {
		t.Fatal(err)
	}
	// A chat target carries its token: it is sealed with the same ring.
	const slack = "slack:https://hooks.slack.com/services/T/B/token"
	chat, err := s.ScheduleJob(ctx, sundial.Job{Name: "c", Handler: "noop", AlarmTargets: []string{"ops@example.com", slack}})
	if err != nil {
		t.Fatal(err)
	}
	k1 := make([]byte, secret.KeyLen)
	k2 := make([]byte, secret.KeyLen)
	for i := range k1 {
		k1[i], k2[i] = 7, 8
	}
	// An xxl-job app's access token, sealed with the same ring and bound to its app.
	sealedToken, err := old.SealFor("xxl-token-of-legacy", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppPut(ctx, &store.App{Name: "legacy", Protocol: store.ProtocolXXLJob, ProtocolVersion: "3.5",
		XXLTokenHash: "h", XXLTokenSealed: sealedToken}); err != nil {
		t.Fatal(err)
	}
	rotated, err := secret.Parse("k2:" + base64.StdEncoding.EncodeToString(k2) + ",k1:" + base64.StdEncoding.EncodeToString(k1))
	if err != nil {
		t.Fatal(err)
	}
	n, unopened, err := sundial.ResealSecrets(ctx, st, rotated)
	if err != nil || n != 3 || unopened != 0 {
		t.Fatalf("ResealSecrets = %d, %d, %v; want 3 resealed (the params, the chat target and the token)", n, unopened, err)
	}
	cj, err := st.JobGet(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	if kid, _ := alarm.TargetKeyID(cj.AlarmTargets[1]); kid != "k2" || cj.AlarmTargets[0] != "ops@example.com" {
		t.Fatalf("after reseal the targets are %q (key %q)", cj.AlarmTargets, kid)
	}
	if plain, err := alarm.OpenTarget(ring(t, "k2", 8), cj.AlarmTargets[1]); err != nil || plain != slack {
		t.Fatalf("the new key alone opens the chat target as %q, %v", plain, err)
	}
	a, err := st.AppGet(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if kid, _ := secret.KeyID(a.XXLTokenSealed); kid != "k2" {
		t.Fatalf("after reseal the token is under %q", kid)
	}
	if tok, err := ring(t, "k2", 8).OpenFor(a.XXLTokenSealed, "legacy"); err != nil || tok != "xxl-token-of-legacy" {
		t.Fatalf("the new key alone opens the token as %q, %v", tok, err)
	}
	if _, err := ring(t, "k2", 8).OpenFor(a.XXLTokenSealed, "other"); err == nil {
		t.Fatal("a token bound to app legacy opened for another app")
	}
	j, err := st.JobGet(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if kid, _ := secret.KeyID(j.Params); kid != "k2" || !j.ParamsSecret {
		t.Fatalf("after reseal the params are under %q", kid)
	}
	if p, err := ring(t, "k2", 8).Open(j.Params); err != nil || p != "pw=hunter2" {
		t.Fatalf("the new key alone opens %q, %v", p, err)
	}
	if n, unopened, err := sundial.ResealSecrets(ctx, st, ring(t, "k3", 9)); err != nil || n != 0 || unopened != 3 {
		t.Fatalf("reseal with a ring lacking k2 = %d, %d, %v; want 3 unopened", n, unopened, err)
	}
}
