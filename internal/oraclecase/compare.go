package oraclecase

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Compare describes how got differs from Quartz's answer, or returns "". Errors match when
// both sides report one, whatever their text.
func Compare(got Result, want Expected) string {
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

// ReadDivergences reads divergences.txt: case lines, each group under a comment line giving
// the reason Sundial deliberately answers differently from Quartz. It maps each case line to
// its reason.
func ReadDivergences(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	reason := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			reason = strings.TrimSpace(line[1:])
		default:
			if reason == "" {
				return nil, fmt.Errorf("divergences: %q has no reason above it", line)
			}
			out[line] = reason
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading divergences: %w", err)
	}
	return out, nil
}
