package sundial_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// Embed a scheduler on an SQLite file, register a handler, and schedule a job with two
// triggers: one that fires at once and a cron trigger for weekday mornings in Berlin.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sundial-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sundial.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	s, err := sundial.New(sundial.Config{Store: st})
	if err != nil {
		log.Fatal(err)
	}
	greeted := make(chan string, 1)
	s.Register("greet", func(ctx context.Context) error {
		run := sundial.ExecutionFrom(ctx)
		sundial.Logger(ctx).Info("greeting", "cause", run.Cause) // stored with the execution
		greeted <- run.Params
		return nil
	})
	if err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer s.Stop(ctx)

	mornings, err := sundial.Cron("0 30 8 ? * MON-FRI", "Europe/Berlin")
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.ScheduleJob(ctx,
		sundial.Job{Name: "greeter", Handler: "greet", Params: "world", MaxRetries: 3, RetryBackoff: time.Second},
		sundial.Trigger{Schedule: schedule.Simple{}}, // once, now
		sundial.Trigger{Schedule: mornings},
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("hello,", <-greeted)
	// Output: hello, world
}
