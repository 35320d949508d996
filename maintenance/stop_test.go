package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/internal/teststore"
	"github.com/sundial-scheduler/sundial/store"
)

// stopBound is how long a duty's Stop may take with its database unreachable: its I/O runs on
// the context Stop cancels, so it ends as soon as the driver sees the cancel.
const stopBound = 2 * time.Second

// TestDutiesStopBoundedDatabaseCut: each duty of the leader that does its work in the
// database (retention, audit retention, daily reports) stops within stopBound while its run
// waits on a database cut off (every byte dropped, nothing closed), on both servers.
func TestDutiesStopBoundedDatabaseCut(t *testing.T) {
	duties := map[string]func(st store.Store) *Periodic{
		"retention": func(st store.Store) *Periodic {
			return Retention(st, time.Hour, time.Hour, nil, nil)
		},
		"audit retention": func(st store.Store) *Periodic {
			return AuditRetention(st, time.Hour, time.Hour, nil, nil)
		},
		"reports": func(st store.Store) *Periodic { return Reports(st, time.Hour, nil, nil) },
		"history partitions": func(st store.Store) *Periodic {
			return HistoryPartitions(st, time.Hour, nil, nil)
		},
	}
	for _, dialect := range []string{"postgres", "mysql"} {
		for name, duty := range duties {
			t.Run(dialect+"/"+name, func(t *testing.T) {
				t.Parallel()
				st, proxy := teststore.OpenProxied(t, dialect)
				p := duty(st)
				p.began, p.ran = make(chan struct{}, 1), make(chan struct{}, 1)
				if err := p.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the run at start", p.began)
				waitFor(t, "the run at start to end", p.ran)

				if err := proxy.Cut(); err != nil {
					t.Fatal(err)
				}
				p.Wake()
				waitFor(t, "the run on the cut database", p.began)
				stopped := make(chan struct{})
				go func() {
					p.Stop()
					close(stopped)
				}()
				select {
				case <-stopped:
				case <-time.After(stopBound):
					t.Fatalf("Stop has not returned after %v with the database cut", stopBound)
				}
			})
		}
	}
}
