package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestScheduleNextCron(t *testing.T) {
	code, out, errOut := runCLI(t, "", "schedule", "next", "--cron", "0 30 2 * * ?", "--tz", "America/New_York",
		"--from", "2024-03-08T00:00:00", "-n", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "2024-03-08T02:30:00.000-05:00  Fri\n2024-03-09T02:30:00.000-05:00  Sat\n2024-03-11T02:30:00.000-04:00  Mon\n"
	if out != want {
		t.Errorf("output\n%s\nwant (the spring-forward day has no 02:30)\n%s", out, want)
	}
}

func TestScheduleNextKindsAndCalendars(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // first column of each line
	}{
		{[]string{"--every", "90s", "--repeat", "2", "--from", "0", "-n", "5"},
			[]string{"1970-01-01T00:00:00.000+00:00", "1970-01-01T00:01:30.000+00:00", "1970-01-01T00:03:00.000+00:00"}},
		{[]string{"--calendar-interval", "1 MONTH", "--from", "2024-01-31T10:00:00", "-n", "3"},
			[]string{"2024-01-31T10:00:00.000+00:00", "2024-02-29T10:00:00.000+00:00", "2024-03-29T10:00:00.000+00:00"}},
		{[]string{"--daily", "09:00-17:00", "--every", "4h", "--days", "MON-FRI", "--from", "2024-06-07T12:00:00",
			"--calendar", "holiday:2024-06-10", "-n", "3"},
			[]string{"2024-06-07T13:00:00.000+00:00", "2024-06-07T17:00:00.000+00:00", "2024-06-11T09:00:00.000+00:00"}},
		{[]string{"--cron", "0 0 9 * * ?", "--from", "2024-06-07T00:00:00", "--calendar", "weekly", "-n", "2"},
			[]string{"2024-06-07T09:00:00.000+00:00", "2024-06-10T09:00:00.000+00:00"}},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"schedule", "next"}, tc.args...)...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, errOut)
			continue
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			got = append(got, strings.Fields(line)[0])
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v:\n got %v\nwant %v", tc.args, got, tc.want)
		}
	}
}

func TestScheduleNextWarnsOnLenientCron(t *testing.T) {
	code, _, errOut := runCLI(t, "", "schedule", "next", "--cron", "0 0 12 ? * MON/2", "-n", "1", "--from", "0")
	if code != 0 || !strings.Contains(errOut, "warning:") || !strings.Contains(errOut, "MON") {
		t.Errorf("exit %d, stderr %q: want success and a warning about MON/2", code, errOut)
	}
}

func TestScheduleNextBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the one line must name this
	}{
		{[]string{"--cron", "0 0 * * * *"}, "day-of-week"},
		{[]string{"--cron", "0 0 12 * * ?", "--tz", "Mars/Olympus"}, "--tz"},
		{[]string{"--cron", "0 0 12 * * ?", "--from", "yesterday"}, "--from"},
		{[]string{"--cron", "0 0 12 * * ?", "-n", "0"}, "--count"},
		{[]string{"--cron", "0 0 12 * * ?", "--every", "1m"}, "exactly one schedule"},
		{[]string{}, "exactly one schedule"},
		{[]string{"--daily", "09:00-17:00", "--every", "1h", "--days", "MON-XYZ"}, "--days"},
		{[]string{"--cron", "0 0 12 * * ?", "--calendar", "monthly:32"}, "--calendar"},
		{[]string{"--calendar-interval", "1 FORTNIGHT"}, "--calendar-interval"},
		{[]string{"--every", "1s", "--repeat", "-2"}, "--repeat: want -1 (forever) or a count of repeats, got -2"},
		{[]string{"--daily", "9-17", "--every", "1h"}, "--daily"},
		{[]string{"--cron", "0 0 12 * * ?", "--from", "2024-01-02T00:00:00", "--end", "2024-01-01T00:00:00"}, "sundial: end time"},
		{[]string{"--bogus"}, "--bogus"},
	} {
		code, out, errOut := runCLI(t, "", append([]string{"schedule", "next"}, tc.args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: stdout %q stderr %q: want one line naming %q", tc.args, out, errOut, tc.want)
		}
	}
}

func TestScheduleNextBatch(t *testing.T) {
	in := "# a comment\ncron UTC 1704067200000 2 0 0 12 * * ?\ncron UTC 1704067200000 2 0 0 * * * *\n"
	code, out, errOut := runCLI(t, in, "schedule", "next", "--batch")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "# a comment\n> cron UTC 1704067200000 2 0 0 12 * * ?\n" +
		"1704110400000 2024-01-01T12:00:00.000+00:00\n1704196800000 2024-01-02T12:00:00.000+00:00\nEND 2\n" +
		"> cron UTC 1704067200000 2 0 0 * * * *\nERROR "
	if !strings.HasPrefix(out, want) || !strings.HasSuffix(out, "END 0\n") {
		t.Errorf("batch output:\n%s\nwant it to start with\n%s", out, want)
	}
}

// TestScheduleCompareDailyEnd runs the command path on Quartz's 600 misfired daily-time-interval
// triggers with an end time (../shared/quartz-oracle/corpus-daily-end.txt, copied to testdata):
// `schedule next --batch` answers every case of the corpus (to its END line), and `schedule compare` finds each
// answer Quartz's, with no divergence named for this family.
func TestScheduleCompareDailyEnd(t *testing.T) {
	const testdata = "../../schedule/testdata/"
	corpus, err := os.ReadFile(testdata + "daily-end-corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, string(corpus), "schedule", "next", "--batch")
	cases, answers := 0, 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "> ") {
			cases++
		} else if strings.HasPrefix(l, "END ") {
			answers++
		}
	}
	if code != 0 || cases != 600 || answers != 600 {
		t.Fatalf("exit %d, %d cases, %d answers, stderr %s: want 600 cases each answered to its END", code, cases, answers, errOut)
	}
	code, out, errOut = runCLI(t, "", "schedule", "compare", testdata+"daily-end-expected.txt", "--divergences", testdata+"divergences.txt")
	if code != 0 || !strings.HasSuffix(out, "600 cases: 600 answered as Quartz did, 0 named divergences, 0 other differences\n") {
		t.Errorf("exit %d, stdout\n%s\nstderr %s\nwant all 600 answered as Quartz did", code, out, errOut)
	}
}

func TestScheduleCompareWithQuartz(t *testing.T) {
	const testdata = "../../schedule/testdata/"
	code, out, errOut := runCLI(t, "", "schedule", "compare", testdata+"quartz-expected.txt", "--divergences", testdata+"divergences.txt")
	if code != 0 || !strings.HasSuffix(out, "495 cases: 480 answered as Quartz did, 15 named divergences, 0 other differences\n") {
		t.Errorf("exit %d, stdout\n%s\nstderr %s\nwant the 15 named divergences and nothing else", code, out, errOut)
	}
	// Without the list the same 15 cases are differences, and the command fails.
	code, out, _ = runCLI(t, "", "schedule", "compare", testdata+"quartz-expected.txt")
	if code != 1 || strings.Count(out, "differs: ") != 15 {
		t.Errorf("exit %d, %d differences: want 1 and 15\n%s", code, strings.Count(out, "differs: "), out)
	}
}
