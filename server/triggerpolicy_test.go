package server

import (
	"context"
	"errors"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestUpdateTriggerPolicyAPI: PATCH /triggers/{id} changes a stored trigger's catch-up window,
// catch-up mode, jitter, DST policy, misfire policy and priority, leaves what it does not
// name, refuses bad values with 400 naming the field (changing nothing), and is an operator's
// action on the job's app: a viewer, or an operator of another app, gets 403.
func TestUpdateTriggerPolicyAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnv(t, dialect)
		ctx := context.Background()
		admin := e.client()
		cron := "0 30 2 * * ?"
		mk := func(name, app string) *api.Job {
			req := jobReq(name, app, "report")
			req.Triggers = []api.TriggerRequest{{Schedule: api.Schedule{Cron: &cron, TimeZone: "America/New_York"}, Priority: 7}}
			return must(admin.CreateJob(ctx, req))(t)
		}
		mine, theirs := mk("mine", "billing"), mk("theirs", "mail")
		op, _ := e.userClient(api.UserRequest{Name: "olga", Role: api.RoleOperator, Scope: []string{"billing"}})
		viewer, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		id := mine.Triggers[0].ID
		s := func(v string) *string { return &v }
		j, neg := int64(5000), int64(-1)
		got := must(op.UpdateTrigger(ctx, id, api.TriggerPolicy{CatchUpWindow: s("2h"), CatchUp: s("coalesce"), JitterMs: &j,
			DST: s("once"), Misfire: s("do_nothing")}))(t)
		if got.CatchUpWindow != "2h0m0s" || got.CatchUp != "coalesce" || got.JitterMs != 5000 || got.DST != "once" ||
			got.Misfire != "do_nothing" || got.Priority != 7 || got.TimeZone != "America/New_York" {
			t.Fatalf("updated trigger %+v", got)
		}
		got = must(op.UpdateTrigger(ctx, id, api.TriggerPolicy{CatchUpWindow: s(""), CatchUp: s(""), DST: s("quartz")}))(t)
		if got.CatchUpWindow != "" || got.CatchUp != "" || got.DST != "quartz" || got.JitterMs != 5000 {
			t.Fatalf("cleared trigger %+v", got)
		}
		for _, bad := range []struct {
			p     api.TriggerPolicy
			field string
		}{
			{api.TriggerPolicy{DST: s("twice")}, "dst"},
			{api.TriggerPolicy{CatchUp: s("sometimes")}, "catchup"},
			{api.TriggerPolicy{CatchUpWindow: s("soon")}, "catchup_window"},
			{api.TriggerPolicy{JitterMs: &neg}, "jitter_ms"},
			{api.TriggerPolicy{Misfire: s("later")}, "misfire"},
		} {
			_, err := op.UpdateTrigger(ctx, id, bad.p)
			if ae := (*api.Error)(nil); !errors.As(err, &ae) || ae.Status != 400 || ae.Field != bad.field {
				t.Errorf("%+v: %v, want 400 naming %s", bad.p, err, bad.field)
			}
		}
		if tr := must(admin.GetTrigger(ctx, id))(t); tr.JitterMs != 5000 || tr.DST != "quartz" {
			t.Errorf("refused updates changed the trigger: %+v", tr)
		}
		_, err := viewer.UpdateTrigger(ctx, id, api.TriggerPolicy{JitterMs: &j})
		wantStatus(t, "a viewer updating a trigger", err, 403)
		_, err = op.UpdateTrigger(ctx, theirs.Triggers[0].ID, api.TriggerPolicy{JitterMs: &j})
		wantStatus(t, "updating another app's trigger", err, 403)
	})
}
