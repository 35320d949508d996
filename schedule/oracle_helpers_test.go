package schedule

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// oracleCase is one block of the Quartz oracle's output (testdata/*-expected.txt): the case
// line and what Quartz 2.3.2 answered for it. See ../../shared/quartz-oracle/README.md.
type oracleCase struct {
	Input string  // the case line, e.g. "cron America/New_York 1710003600000 4 0 30 2 * * ?"
	Times []int64 // fire times, epoch ms (misfire cases: the fires after Next)
	Err   string  // "" or the text after "ERROR "

	// Misfire cases only.
	Misfire        bool
	Now, Missed    int64
	Next           int64
	HasNext        bool
	Repeat         int
	TimesTriggered int
	HasRepeat      bool
}

// Kind is the case's first token: cron, crontrig, simple, calint, daily, calendar, misfire.
func (c oracleCase) Kind() string { return strings.Fields(c.Input)[0] }

// loadOracle reads an oracle output file from testdata.
func loadOracle(t testing.TB, name string) []oracleCase {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, err := readOracle(bufio.NewScanner(f))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cases
}

func readOracle(sc *bufio.Scanner) ([]oracleCase, error) {
	var out []oracleCase
	var cur *oracleCase
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "> "):
			cur = &oracleCase{Input: line[2:]}
		case cur == nil:
			return nil, fmt.Errorf("line %q outside a block", line)
		case strings.HasPrefix(line, "ERROR "):
			cur.Err = line[len("ERROR "):]
		case strings.HasPrefix(line, "END "):
			n, err := strconv.Atoi(line[4:])
			if err != nil || n != len(cur.Times) {
				return nil, fmt.Errorf("count mismatch in %q", cur.Input)
			}
			out = append(out, *cur)
			cur = nil
		case f[0] == "NOW" || f[0] == "MISFIRED" || f[0] == "NEXT":
			cur.Misfire = true
			if f[1] == "none" {
				break
			}
			ms, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, err
			}
			switch f[0] {
			case "NOW":
				cur.Now = ms
			case "MISFIRED":
				cur.Missed = ms
			default:
				cur.Next, cur.HasNext = ms, true
			}
		case f[0] == "REPEAT":
			cur.Repeat, _ = strconv.Atoi(f[1])
			cur.TimesTriggered, _ = strconv.Atoi(f[3])
			cur.HasRepeat = true
		default:
			ms, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad fire line %q: %w", line, err)
			}
			cur.Times = append(cur.Times, ms)
		}
	}
	return out, sc.Err()
}

func TestReadOracle(t *testing.T) {
	cases := loadOracle(t, "quartz-expected.txt")
	if len(cases) != 495 {
		t.Fatalf("quartz-expected.txt: %d cases, want 495", len(cases))
	}
	errs := 0
	for _, c := range cases {
		if c.Err != "" {
			errs++
		}
	}
	if errs != 75 {
		t.Errorf("quartz-expected.txt: %d ERROR blocks, want 75", errs)
	}
}
