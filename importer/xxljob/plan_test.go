package xxljob_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/importer"
	"github.com/sundial-scheduler/sundial/importer/xxljob"
	"github.com/sundial-scheduler/sundial/importer/xxljob/xxltest"
	"github.com/sundial-scheduler/sundial/schedule"
)

var now = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

// Both schemas read into the same plan, but for what only 3.5 has (tokens) and the
// generation.
func TestReadMapsEveryStrategy(t *testing.T) {
	for _, v := range xxltest.Versions {
		t.Run(v, func(t *testing.T) {
			_, db := xxltest.Create(t, v)
			xxltest.Fill(t, db, v, now)
			p, err := xxljob.Read(context.Background(), db, xxljob.Options{Zone: "Asia/Shanghai", Now: now.Add(xxltest.FixRateAhead + time.Minute), Source: "test"})
			if err != nil {
				t.Fatal(err)
			}
			wantGen, wantShape := "2.x", "2.x schema"
			if v == "3.5" {
				wantGen, wantShape = "3.5", "3.5 schema"
			}
			if !strings.Contains(p.Source, wantShape) {
				t.Errorf("source %q, want the %s", p.Source, wantShape)
			}
			if assumed := slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "2.x assumed") }); assumed != (v == "2.4") {
				t.Errorf("notes %q: the 2.x guess noted: %v, want %v", p.Notes, assumed, v == "2.4")
			}
			var apps []string
			for _, a := range p.Apps {
				apps = append(apps, fmt.Sprintf("%s %q %s %v %s %s", a.Name, a.Title, a.AddressMode, a.Addresses, a.Protocol, a.Generation))
			}
			if got, want := strings.Join(apps, "; "), `order-exec "Orders" auto [] xxl-job `+wantGen+
				`; report-exec "Reports" manual [http://10.0.0.5:9999 http://10.0.0.6:9999] xxl-job `+wantGen; got != want {
				t.Errorf("apps\n got %s\nwant %s", got, want)
			}

			jobs := map[string]*importer.Job{}
			for _, j := range p.Jobs {
				jobs[j.Name] = j
			}
			type want struct {
				name, routing string
				conc          sundial.Concurrency
				misfire       schedule.MisfirePolicy
				paused        bool
			}
			for _, w := range []want{
				{"xxl-1", "first", sundial.Serial, schedule.MisfireDoNothing, false},
				{"xxl-2", "last", sundial.Discard, schedule.MisfireFireNow, false},
				{"xxl-3", "round_robin", sundial.Replace, schedule.MisfireRescheduleNextRemaining, false},
				{"xxl-4", "random", sundial.Serial, schedule.MisfireFireNow, true},
				{"xxl-5", "consistent_hash", sundial.Serial, schedule.MisfireDoNothing, true},
				{"xxl-6", "least_frequently_used", sundial.Serial, schedule.MisfireDoNothing, false},
				{"xxl-8", "failover", sundial.Serial, schedule.MisfireDoNothing, false},
				{"xxl-9", "busy_over", sundial.Serial, schedule.MisfireDoNothing, false},
				{"xxl-10", "sharding_broadcast", sundial.Serial, schedule.MisfireDoNothing, false},
			} {
				j := jobs[w.name]
				if j == nil || len(j.Triggers) != 1 {
					t.Errorf("%s: %+v, want a job with one trigger", w.name, j)
					continue
				}
				tr := j.Triggers[0]
				if j.Routing != w.routing || j.Concurrency != w.conc || tr.Misfire != w.misfire || tr.Paused != w.paused {
					t.Errorf("%s: routing %s concurrency %s misfire %s paused %v, want %s %s %s %v", w.name, j.Routing, j.Concurrency,
						tr.Misfire, tr.Paused, w.routing, w.conc, w.misfire, w.paused)
				}
			}
			if j := jobs["xxl-7"]; j == nil || j.Routing != "least_recently_used" || len(j.Triggers) != 0 {
				t.Errorf("xxl-7 (NONE): %+v, want least_recently_used without a trigger", j)
			}
			one := jobs["xxl-1"]
			if one.Group != "order-exec" || one.App != "order-exec" || one.Handler != "orderJob" || one.Params != "p=1" ||
				one.MaxRetries != 2 || one.Timeout != 30*time.Second || one.Description != "Nightly orders (author alice)" ||
				!slices.Equal(one.AlarmTargets, []string{"ops@example.com", "dev@example.com"}) ||
				!slices.Equal(one.Children, []importer.Key{{Group: "order-exec", Name: "xxl-2"}, {Group: "order-exec", Name: "xxl-3"}}) {
				t.Errorf("xxl-1: %+v", one)
			}
			if c, ok := one.Triggers[0].Schedule.(*schedule.Cron); !ok || c.String() != "0 0 2 * * ?" || one.Triggers[0].TimeZone != "Asia/Shanghai" {
				t.Errorf("xxl-1's trigger: %+v", one.Triggers[0])
			}
			// The running FIX_RATE job keeps its phase: its next fire was a minute before "now",
			// so the first slot after now is 30 s × 2 later.
			three := jobs["xxl-3"].Triggers[0]
			if s, ok := three.Schedule.(schedule.Simple); !ok || s.Interval != 30*time.Second || s.RepeatCount != schedule.RepeatForever ||
				!three.Start.Equal(now.Add(xxltest.FixRateAhead+60*time.Second)) {
				t.Errorf("xxl-3's trigger: %+v start %v", three.Schedule, three.Start)
			}
			five := jobs["xxl-5"]
			if five.Handler != "shell" || five.Params != "echo v3" ||
				!slices.Equal(five.Scripts, []importer.Script{{Source: "echo v1", Note: "first"}, {Source: "echo v2", Note: "second"}, {Source: "echo v3", Note: "third"}}) {
				t.Errorf("xxl-5 (GLUE_SHELL): handler %s params %q scripts %v", five.Handler, five.Params, five.Scripts)
			}
			if six := jobs["xxl-6"]; six.Handler != "python" || len(six.Scripts) != 1 || six.Scripts[0].Note != "imported from XXL-JOB" {
				t.Errorf("xxl-6 (GLUE_PYTHON): handler %s scripts %v", six.Handler, six.Scripts)
			}
			if twelve := jobs["xxl-12"]; !slices.Equal(twelve.AlarmTargets, []string{"ops@example.com"}) || len(twelve.Triggers) != 0 {
				t.Errorf("xxl-12: alarms %v triggers %d, want the good address and no trigger", twelve.AlarmTargets, len(twelve.Triggers))
			}
			if _, ok := jobs["xxl-13"]; ok {
				t.Error("xxl-13 (a BEAN job without a handler) is planned")
			}

			var unmapped []string
			for _, u := range p.Unmapped {
				unmapped = append(unmapped, u.Item)
			}
			wantUnmapped := []string{}
			if v == "3.5" {
				wantUnmapped = append(wantUnmapped, "xxl_job_group 1 (order-exec): access token", "xxl_job_group 2 (report-exec): access token")
			}
			wantUnmapped = append(wantUnmapped,
				`xxl_job_info 6 "Python report": parameter "--fast"`,
				`xxl_job_info 11 "Fixed delay": schedule type FIX_DELAY`,
				`xxl_job_info 12 "Broken": alarm e-mail "not-an-email"`,
				`xxl_job_info 12 "Broken": child job 99`,
				`xxl_job_info 12 "Broken": child job "abc"`,
				`xxl_job_info 12 "Broken": child job 12`,
				`xxl_job_info 12 "Broken": cron "0 0 25 * * ?"`,
				`xxl_job_info 13 "No handler"`,
				`xxl_job_info 14 "Lost group"`)
			if got, want := strings.Join(unmapped, "\n"), strings.Join(wantUnmapped, "\n"); got != want {
				t.Errorf("unmapped\n got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// Without --zone a database with CRON jobs is refused: the zone cron ran in is not in it.
func TestReadNeedsTheZone(t *testing.T) {
	_, db := xxltest.Create(t, "2.4")
	xxltest.Fill(t, db, "2.4", now)
	_, err := xxljob.Read(context.Background(), db, xxljob.Options{})
	if err == nil || !strings.Contains(err.Error(), "--zone") {
		t.Fatalf("Read without a zone: %v, want an error asking for --zone", err)
	}
}

// --from takes the driver's DSN (what Create returns) and a URL's host:port form alike.
func TestOpenTakesAURL(t *testing.T) {
	dsn, db := xxltest.Create(t, "3.5")
	xxltest.Fill(t, db, "3.5", now)
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql://"))
	if err != nil {
		t.Fatal(err)
	}
	url := "mysql://" + cfg.User
	if cfg.Passwd != "" {
		url += ":" + cfg.Passwd
	}
	url += "@" + cfg.Addr + "/" + cfg.DBName
	for _, from := range []string{dsn, url} {
		x, err := xxljob.Open(from)
		if err != nil {
			t.Fatalf("Open(%s): %v", from, err)
		}
		p, err := xxljob.Read(context.Background(), x, xxljob.Options{Zone: "UTC"})
		x.Close()
		if err != nil || len(p.Jobs) != 12 {
			t.Errorf("Read through %s: %v, %d jobs", from, err, len(p.Jobs))
		}
	}
	if _, err := xxljob.Open("postgres://x@y/z"); err == nil || !strings.Contains(err.Error(), "want mysql://") {
		t.Errorf("Open of a postgres URL: %v", err)
	}
	if _, err := xxljob.Open("mysql://xxl:secret@10.0.0.2:3306"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open without a database: %v (and the password must not show)", err)
	}
}
