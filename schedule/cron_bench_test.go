package schedule

import (
	"testing"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// cronBenchExprs are expressions that mean the same to Quartz and to robfig/cron (whose
// day-of-week counts from 0 = Sunday and has no '?').
var cronBenchExprs = []struct{ name, quartz, robfig string }{
	{"daily-noon", "0 0 12 * * ?", "0 0 12 * * *"},
	{"every-15min-weekdays", "0 0/15 9-17 ? * MON-FRI", "0 */15 9-17 * * 1-5"},
	{"every-second", "* * * * * ?", "* * * * * *"},
	{"monthly-1st", "0 30 6 1 * ?", "0 30 6 1 * *"},
}

func BenchmarkCronNext(b *testing.B) {
	for _, zone := range []string{"UTC", "America/New_York"} {
		loc := cronLoad(b, zone)
		for _, e := range cronBenchExprs {
			c, err := ParseCron(e.quartz, loc)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(zone+"/"+e.name, func(b *testing.B) {
				b.ReportAllocs()
				from := time.Date(2024, 3, 7, 10, 23, 45, 0, loc)
				limit := from.AddDate(6, 0, 0).Unix()
				t := from
				for b.Loop() {
					next, ok := c.Next(t)
					if !ok {
						b.Fatal("no next time")
					}
					t = next
					if t.Unix() > limit { // keeps both in years with the same DST rules
						t = from
					}
				}
			})
		}
	}
}

func BenchmarkRobfigCronNext(b *testing.B) {
	parser := robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)
	for _, zone := range []string{"UTC", "America/New_York"} {
		loc := cronLoad(b, zone)
		for _, e := range cronBenchExprs {
			s, err := parser.Parse(e.robfig)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(zone+"/"+e.name, func(b *testing.B) {
				b.ReportAllocs()
				from := time.Date(2024, 3, 7, 10, 23, 45, 0, loc)
				limit := from.AddDate(6, 0, 0).Unix()
				t := from
				for b.Loop() {
					t = s.Next(t)
					if t.Unix() > limit { // keeps both in years with the same DST rules
						t = from
					}
				}
			})
		}
	}
}

// TestCronAgreesWithRobfig guards the benchmark: both libraries must compute the same times.
func TestCronAgreesWithRobfig(t *testing.T) {
	parser := robfig.NewParser(robfig.Second | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)
	loc := cronLoad(t, "Europe/Berlin")
	for _, e := range cronBenchExprs {
		c, err := ParseCron(e.quartz, loc)
		if err != nil {
			t.Fatal(err)
		}
		s, err := parser.Parse(e.robfig)
		if err != nil {
			t.Fatal(err)
		}
		a := time.Date(2024, 6, 7, 10, 23, 45, 0, loc)
		b := a
		for range 200 {
			na, _ := c.Next(a)
			nb := s.Next(b)
			if !na.Equal(nb) {
				t.Fatalf("%s: after %v Sundial %v, robfig %v", e.name, a, na, nb)
			}
			a, b = na, nb
		}
	}
}
