package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
	"github.com/sundial-scheduler/sundial/web"
)

// TestLoginPageSSO: the login page offers single sign-on, keeping the page to return to, only
// on a server where it is on.
func TestLoginPageSSO(t *testing.T) {
	ctx := context.Background()
	for _, withSSO := range []bool{true, false} {
		st, err := sqlstore.Open(ctx, testdb.DSN(t, "sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
		if withSSO {
			// The provider is asked only when someone signs in with it.
			rules, err := server.ParseOIDCRoleMap("ops=viewer")
			if err != nil {
				t.Fatal(err)
			}
			cfg.OIDC = &server.OIDCConfig{Issuer: "http://127.0.0.1:1", ClientID: "sundial",
				RedirectURL: "http://127.0.0.1:1/api/v1/auth/sso/callback", RoleMap: rules}
		}
		srv, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := web.Mount(srv, web.Config{}); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		resp, err := http.Get(hs.URL + "/login?next=/jobs")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		offered := strings.Contains(body, "Sign in with SSO")
		if resp.StatusCode != 200 || offered != withSSO {
			t.Fatalf("login page (SSO on: %v): %d, offers SSO: %v", withSSO, resp.StatusCode, offered)
		}
		if withSSO && !strings.Contains(body, "/api/v1/auth/sso/login?next=%2Fjobs") {
			t.Fatalf("the SSO button loses the page to return to: %s", body)
		}
	}
}
