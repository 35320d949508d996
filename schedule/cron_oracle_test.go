package schedule

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cronOracleCase runs one `cron` or `crontrig` line of the oracle corpus through Sundial. A
// non-nil error stands for Quartz's ERROR block.
func cronOracleCase(input string) ([]int64, error) {
	f := strings.Fields(input)
	if len(f) < 4 {
		return nil, errInput("missing fields")
	}
	loc, err := time.LoadLocation(f[1])
	if err != nil {
		return nil, err
	}
	startMs, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(f[3])
	if err != nil || n < 1 || n > 10000 {
		return nil, errInput("bad N")
	}
	// The oracle re-joins the expression with single spaces; keep the original spacing (one
	// case has tabs), which Quartz treats the same.
	expr := input
	for range 4 {
		expr = strings.TrimLeft(expr, " \t")
		i := strings.IndexAny(expr, " \t")
		if i < 0 {
			i = len(expr)
		}
		expr = expr[i:]
	}
	c, err := ParseCron(expr, loc)
	if err != nil {
		return nil, err
	}
	start := time.UnixMilli(startMs)
	var out []int64
	switch f[0] {
	case "cron":
		t := start
		for range n {
			next, ok := c.Next(t)
			if !ok {
				break
			}
			out = append(out, next.UnixMilli())
			t = next
		}
	case "crontrig":
		tr := &Trigger{Schedule: c, Start: start}
		if err := tr.Validate(); err != nil {
			return nil, err
		}
		if _, err := tr.ComputeFirst(nil); err != nil {
			return nil, nil
		}
		for range n {
			if tr.Next.IsZero() {
				break
			}
			out = append(out, tr.Next.UnixMilli())
			tr.Triggered(nil)
		}
	default:
		return nil, errInput("not a cron case")
	}
	return out, nil
}

type errInput string

func (e errInput) Error() string { return "input: " + string(e) }

func TestCronOracle(t *testing.T) {
	files := []string{"quartz-expected.txt"}
	if _, err := os.Stat("testdata/extra-expected.txt"); err == nil {
		files = append(files, "extra-expected.txt")
	}
	total := 0
	for _, name := range files {
		for _, oc := range loadOracle(t, name) {
			if k := oc.Kind(); k != "cron" && k != "crontrig" {
				continue
			}
			total++
			got, err := cronOracleCase(oc.Input)
			switch {
			case oc.Err != "" && err == nil:
				t.Errorf("%s: %s\n  Quartz: ERROR %s\n  Sundial accepted it: %v", name, oc.Input, oc.Err, cronFmt(got))
			case oc.Err == "" && err != nil:
				t.Errorf("%s: %s\n  Quartz: %v\n  Sundial: %v", name, oc.Input, cronFmt(oc.Times), err)
			case oc.Err == "" && !slices.Equal(got, oc.Times):
				t.Errorf("%s: %s\n  Quartz:  %v\n  Sundial: %v", name, oc.Input, cronFmt(oc.Times), cronFmt(got))
			}
		}
	}
	if total < 150 {
		t.Fatalf("only %d cron/crontrig cases found", total)
	}
	t.Logf("%d cron/crontrig oracle cases", total)
}

func cronFmt(ms []int64) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(time.UnixMilli(m).UTC().Format("2006-01-02T15:04:05Z "))
	}
	return b.String()
}
