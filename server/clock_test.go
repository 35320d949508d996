package server

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/clock"
)

// TestExpiriesFollowTheServerClock: token, session and reset-token expiry are read on the
// server's clock, not the wall clock, so a cluster with an injected clock (tests, a node
// whose clock the operator set) agrees with itself. The clock here is three days behind.
func TestExpiriesFollowTheServerClock(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		clk := clock.NewFake(time.Now().Add(-72 * time.Hour))
		e := newEnvWith(t, dialect, func(c *Config) { c.Scheduler.Clock = clk })
		ctx := context.Background()

		// An hour after the server's now is in the future, though in the wall clock's past.
		tok := must(e.client().CreateToken(ctx, api.TokenRequest{Name: "soon", ExpiresAt: clk.Now().Add(time.Hour).Format(time.RFC3339)}))(t)
		soon := must(api.NewClient(e.url, tok.Token))(t)
		must(soon.Me(ctx))(t)
		viewer, u := e.userClient(api.UserRequest{Name: "petra", Role: api.RoleViewer})
		must(viewer.Me(ctx))(t)
		reset := must(e.client().ResetPassword(ctx, u.ID))(t)

		clk.Advance(25 * time.Hour) // past the token, the 12 h session and the 24 h reset
		_, err := soon.Me(ctx)
		wantStatus(t, "a token past its expiry", err, 401)
		viewer2, _ := e.userClient(api.UserRequest{Name: "vera", Role: api.RoleViewer})
		clk.Advance(13 * time.Hour)
		_, err = viewer2.Me(ctx)
		wantStatus(t, "a session past its TTL", err, 401)
		anon := must(api.NewClient(e.url, ""))(t)
		err = anon.RedeemReset(ctx, api.ResetRequest{Token: reset.Token, NewPassword: "Copper-Meadow-Trellis-17"})
		wantStatus(t, "a reset token past its expiry", err, 400)
	})
}
