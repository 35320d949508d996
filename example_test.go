package sundial_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
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

// Split a run into sub-tasks: Start maps one payload per file, every node that registered the
// handler runs them (each exactly once to an accepted result, retried up to the job's
// MaxRetries), and Reduce adds up their results once all have ended.
func ExampleScheduler_RegisterMapReduce() {
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
	total := make(chan int, 1)
	s.RegisterMapReduce("count-lines", sundial.MapReduce{
		Start: func(ctx context.Context) error {
			return sundial.Map(ctx, []json.RawMessage{
				json.RawMessage(`"a.log"`), json.RawMessage(`"b.log"`), json.RawMessage(`"c.log"`)})
		},
		Task: func(ctx context.Context, file json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(strconv.Itoa(len(file))), nil // the file's line count, say
		},
		Reduce: func(ctx context.Context, results *sundial.MapResults) error {
			sum := 0
			err := results.Each(ctx, func(r sundial.SubtaskResult) error {
				n, _ := strconv.Atoi(string(r.Result))
				sum += n
				return nil
			})
			total <- sum
			return err
		},
	})
	if err := s.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer s.Stop(ctx)
	id, err := s.ScheduleJob(ctx, sundial.Job{Name: "count", Handler: "count-lines", MaxRetries: 2})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.TriggerNow(ctx, id); err != nil {
		log.Fatal(err)
	}
	fmt.Println("lines:", <-total)
	// Output: lines: 21
}
