package server

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/secret"
)

// TestTriggerParamsDataAPI: a trigger added with a description, params and data shows them;
// its fire runs with its params and its data merged over the job's; a secret job's trigger
// params are stored sealed and shown as ***; a script job's trigger refuses params at the
// field, nested under triggers[i] when given with the job.
func TestTriggerParamsDataAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		type run struct {
			params string
			data   map[string]any
		}
		got := make(chan run, 4)
		e := newEnvOn(t, openStore(t, dialect), func(c *Config) {
			c.Scheduler.Secrets = testKeyring(t, "k1", 7)
		}, func(s *Server) {
			s.Register("grab", func(ctx context.Context) error {
				x := sundial.ExecutionFrom(ctx)
				got <- run{x.Params, x.Data}
				return nil
			})
		})
		c := e.client()
		ctx := context.Background()
		j := must(c.CreateJob(ctx, api.JobRequest{Name: "report", Handler: "grab", Params: "--region us",
			Data: map[string]any{"region": "us", "owner": "ops"}}))(t)
		tr := must(c.AddTrigger(ctx, j.ID, api.TriggerRequest{Name: "eu", Schedule: api.Schedule{Once: true},
			Description: "the EU run", Params: "--region eu", Data: map[string]any{"region": "eu"}}))(t)
		shown := must(c.GetTrigger(ctx, tr.ID))(t)
		if shown.Description != "the EU run" || shown.Params != "--region eu" || !reflect.DeepEqual(shown.Data, map[string]any{"region": "eu"}) {
			t.Fatalf("GET trigger shows description %q params %q data %v", shown.Description, shown.Params, shown.Data)
		}
		if r := <-got; r.params != "--region eu" || !reflect.DeepEqual(r.data, map[string]any{"region": "eu", "owner": "ops"}) {
			t.Fatalf("the trigger's fire ran with params %q data %v", r.params, r.data)
		}

		sj := must(c.CreateJob(ctx, api.JobRequest{Name: "secret", Handler: "grab", Params: "x", ParamsSecret: true}))(t)
		st := must(c.AddTrigger(ctx, sj.ID, api.TriggerRequest{Name: "s", Schedule: api.Schedule{Once: true}, Params: secretValue}))(t)
		if st.Params != secret.Mask {
			t.Fatalf("a secret job's trigger shows params %q, want %q", st.Params, secret.Mask)
		}
		var stored string
		if err := e.st.DB().QueryRowContext(ctx, "SELECT params FROM triggers WHERE id = "+itoa(st.ID)).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stored, "sdl1:k1:") {
			t.Fatalf("a secret job's trigger params are stored as %.30q, want sealed", stored)
		}
		if r := <-got; r.params != secretValue {
			t.Fatalf("the secret job's trigger fire ran with params %q, want them in clear", r.params)
		}

		var ae *api.Error
		sh := must(c.CreateJob(ctx, api.JobRequest{Name: "script", Handler: "shell", App: "ops", Params: "echo hi\n"}))(t)
		_, err := c.AddTrigger(ctx, sh.ID, api.TriggerRequest{Name: "evil", Schedule: api.Schedule{Once: true}, Params: "rm -rf /"})
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "params" {
			t.Fatalf("trigger params for a script job: %v, want 400 at params", err)
		}
		_, err = c.CreateJob(ctx, api.JobRequest{Name: "script2", Handler: "shell", App: "ops", Params: "echo hi\n",
			Triggers: []api.TriggerRequest{{Schedule: api.Schedule{Once: true}, Params: "rm -rf /"}}})
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Field != "triggers[0].params" {
			t.Fatalf("trigger params for a new script job: %v, want 400 at triggers[0].params", err)
		}
	})
}
