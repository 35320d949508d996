// Command chaos runs the chaos suite's long version (docs/chaos.md): for each database, a
// load of at least -fires fires under the long fault plan (node kills with same-id and new-id
// restarts, freezes past the node timeout, executor restarts, database restarts, 30 s
// network cuts, latency), every fault kind several times, then a 60 s settle and the report.
// It exits 1 when a database's run missed a target.
//
//	go run ./internal/chaos/cmd/chaos -db postgres,mysql -fires 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial/internal/chaos"
)

func main() {
	dbs := flag.String("db", "postgres,mysql", "databases to run on, in order: postgres, mysql (MariaDB)")
	fires := flag.Int("fires", 100_000, "fires per database (sets the load's length)")
	triggers := flag.Int("triggers", 100, "triggers, each firing every 0.5–1 s")
	settle := flag.Duration("settle", time.Minute, "how long live executions may take to end after the load")
	short := flag.Bool("short", false, "the short fault plan (CI's) instead of the long one")
	seed := flag.Uint64("seed", 1, "seed of the load's and the fault plan's choices")
	keep := flag.Bool("keep", false, "keep the working directory (database, ledger, logs)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A trigger fires every 750 ms on average.
	load := time.Duration(*fires) * 750 * time.Millisecond / time.Duration(*triggers)
	failed := false
	for _, db := range strings.Split(*dbs, ",") {
		rep, err := chaos.Run(ctx, chaos.Options{Dialect: strings.TrimSpace(db), Triggers: *triggers, Load: load,
			Settle: *settle, Long: !*short, Seed: *seed, Keep: *keep, Log: os.Stderr})
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos %s: %v\n", db, err)
			os.Exit(2)
		}
		fmt.Println(rep)
		failed = failed || len(rep.Failed()) > 0
	}
	if failed {
		os.Exit(1)
	}
}
