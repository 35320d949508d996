package sundial

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// mapChildEnv carries the DSN to the child process of TestMapReduceKilledNode.
const mapChildEnv = "SUNDIAL_MAP_CHILD_DSN"

// MapLedgerTask is the Task of the killed-node test, on both sides: a little work, then a
// line "RAN payload token" on out (the ledger, outside the database) and the token as the
// result, so the accepted result names the one run it came from.
func MapLedgerTask(name string, out func(string)) func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, p json.RawMessage) (json.RawMessage, error) {
		time.Sleep(2 * time.Millisecond) // work: keeps the map running long enough to be killed in
		st := SubtaskFrom(ctx)
		token := fmt.Sprintf("%s-%d-%d", name, st.ID, st.Attempt)
		out(fmt.Sprintf("RAN %s %s", p, token))
		return json.Marshal(token)
	}
}

// MapTestStart maps the payloads 0..n-1.
func MapTestStart(n int) Handler {
	return func(ctx context.Context) error {
		ps := make([]json.RawMessage, n)
		for i := range ps {
			ps[i] = json.RawMessage(fmt.Sprint(i))
		}
		return Map(ctx, ps)
	}
}

// MapTestEngine is the engine timing of both sides: a silent node is dead after a second.
var MapTestEngine = engine.Config{HeartbeatInterval: 200 * time.Millisecond, NodeTimeout: time.Second, PollInterval: 50 * time.Millisecond}

// runMapChild runs the victim node: it takes the fire, maps, and runs sub-tasks, printing its
// ledger lines on stdout, until it is killed.
func runMapChild(dsn string) {
	st, err := sqlstore.Open(context.Background(), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	s, err := New(Config{Store: st, NodeID: "victim", Engine: MapTestEngine,
		MapReduce: MapConfig{Workers: 16, Batch: 50, PollInterval: 50 * time.Millisecond}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	s.RegisterMapReduce("ledger", MapReduce{
		Start:  MapTestStart(mapKilledN),
		Task:   MapLedgerTask("victim", func(l string) { fmt.Println(l) }),
		Reduce: func(context.Context, *MapResults) error { select {} }, // never here: killed first
	})
	if err := s.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	select {} // until killed
}

// mapKilledN is the size of the killed-node test's map.
const mapKilledN = 3000
