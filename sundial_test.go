package sundial_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// openStore opens a migrated SQLite store in a temp dir, closed when t ends.
func openStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "sundial.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// A setting given both as a shorthand and in Engine must agree: the scheduler used to take
// the shorthand silently.
func TestConfigSettingsHaveOneValue(t *testing.T) {
	st := openStore(t)
	for _, tc := range []struct {
		name string
		cfg  sundial.Config
		want string // "" for no error
	}{
		{"shorthand", sundial.Config{Store: st, MisfireThreshold: time.Minute}, ""},
		{"engine", sundial.Config{Store: st, Engine: engine.Config{MisfireThreshold: time.Minute}}, ""},
		{"same twice", sundial.Config{Store: st, MisfireThreshold: time.Minute, Engine: engine.Config{MisfireThreshold: time.Minute}}, ""},
		{"store in engine", sundial.Config{Engine: engine.Config{Store: st}}, ""},
		{"misfire", sundial.Config{Store: st, MisfireThreshold: time.Minute, Engine: engine.Config{MisfireThreshold: time.Second}},
			"Config.MisfireThreshold (1m0s) and Config.Engine.MisfireThreshold (1s) disagree"},
		{"node", sundial.Config{Store: st, NodeID: "a", Engine: engine.Config{NodeID: "b"}}, "Config.NodeID (a) and Config.Engine.NodeID (b)"},
		{"drain", sundial.Config{Store: st, DrainTimeout: time.Second, Engine: engine.Config{DrainTimeout: 2 * time.Second}}, "Config.DrainTimeout"},
		{"max running", sundial.Config{Store: st, MaxRunning: 1, Engine: engine.Config{MaxRunning: 2}}, "Config.MaxRunning"},
		{"heartbeat", sundial.Config{Store: st, HeartbeatInterval: time.Second, Engine: engine.Config{HeartbeatInterval: 2 * time.Second}}, "Config.HeartbeatInterval"},
		{"dispatcher", sundial.Config{Store: st, Engine: engine.Config{Dispatcher: nopDispatcher{}}}, "Config.Engine.Dispatcher"},
		{"no store", sundial.Config{}, "Config.Store is required"},
	} {
		_, err := sundial.New(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

type nopDispatcher struct{}

func (nopDispatcher) Dispatch(context.Context, *engine.Fire) engine.Result { return engine.Result{} }
