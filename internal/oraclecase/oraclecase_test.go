package oraclecase

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const testdata = "../../schedule/testdata/"

// TestQuartzOracle evaluates every case the real Quartz 2.3.2 answered — its corpus and the
// cases Sundial added where the corpus was silent — and requires Quartz's answer: the same
// fire times to the millisecond, the same misfire state, and an error exactly where Quartz
// reports one. The cases listed in divergences.txt are where Quartz is plainly broken; the
// schedule package's tests pin Sundial's own answer for each, with the reason.
func TestQuartzOracle(t *testing.T) {
	divergent := loadDivergences(t)
	for _, name := range []string{"quartz", "extra"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(testdata + name + "-expected.txt")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want, err := ReadExpected(f)
			if err != nil {
				t.Fatal(err)
			}
			if name == "quartz" && len(want) != 495 {
				t.Fatalf("%d Quartz cases, want the corpus's 495", len(want))
			}
			matched := 0
			for _, w := range want {
				got := Evaluate(w.Input)
				diff := compare(got, w)
				if _, ok := divergent[w.Input]; ok {
					if diff == "" {
						t.Errorf("%s: listed in divergences.txt but matches Quartz", w.Input)
					}
					continue
				}
				if diff != "" {
					t.Errorf("%s: %s", w.Input, diff)
					continue
				}
				matched++
			}
			t.Logf("%s: %d of %d cases match Quartz; the rest are named divergences", name, matched, len(want))
		})
	}
}

// compare describes how got differs from Quartz's answer, or returns "".
func compare(got Result, want Expected) string {
	if (got.Err != nil) != (want.Err != "") {
		return "error " + errText(got.Err) + ", Quartz: " + orNone(want.Err)
	}
	if got.Err != nil {
		return ""
	}
	if !slices.Equal(millisOf(got), want.Times) {
		return "fire times " + strings.Join(fmtMillis(millisOf(got)), " ") + ", Quartz " + strings.Join(fmtMillis(want.Times), " ")
	}
	if got.Misfire != want.Misfire {
		return "misfire state missing"
	}
	if !want.Misfire {
		return ""
	}
	switch {
	case got.Now.UnixMilli() != want.Now || got.Missed.UnixMilli() != want.Missed:
		return "NOW/MISFIRED differ"
	case got.Next.IsZero() == want.HasNext || (want.HasNext && got.Next.UnixMilli() != want.Next):
		return "NEXT " + got.stampOrNone() + ", Quartz " + fmtMillis([]int64{want.Next})[0]
	case want.HasRepeat && (got.Repeat != want.Repeat || got.TimesTriggered != want.TimesTriggered):
		return "REPEAT/TIMES differ"
	}
	return ""
}

func millisOf(r Result) []int64 {
	out := make([]int64, len(r.Times))
	for i, t := range r.Times {
		out[i] = t.UnixMilli()
	}
	return out
}

func (r Result) stampOrNone() string {
	if r.Next.IsZero() {
		return "none"
	}
	return r.stamp(r.Next)
}

func fmtMillis(ms []int64) []string {
	r := Result{Loc: time.UTC}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = r.stamp(time.UnixMilli(m))
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// loadDivergences reads divergences.txt: case lines, each group under a comment giving the
// reason Sundial deliberately answers differently from Quartz.
func loadDivergences(t *testing.T) map[string]string {
	f, err := os.Open(testdata + "divergences.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	reason := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			reason = strings.TrimSpace(line[1:])
		default:
			if reason == "" {
				t.Fatalf("divergences.txt: %q has no reason above it", line)
			}
			out[line] = reason
		}
	}
	return out
}
