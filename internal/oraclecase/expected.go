package oraclecase

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Expected is one block of the oracle's output format: a case line and its answer.
type Expected struct {
	Input string  // the case line
	Times []int64 // fire times, epoch ms (misfire blocks: the fires after Next)
	Err   string  // "" or the text after "ERROR "

	// Misfire blocks only.
	Misfire        bool
	Now, Missed    int64
	Next           int64
	HasNext        bool // false for "NEXT none"
	HasRepeat      bool // simple triggers: REPEAT <Repeat> TIMES <TimesTriggered>
	Repeat         int
	TimesTriggered int
}

// ReadExpected reads a file in the oracle's output format.
func ReadExpected(r io.Reader) ([]Expected, error) {
	var out []Expected
	var cur *Expected
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		f := strings.Fields(line)
		var err error
		switch {
		case len(f) == 0 || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "> "):
			cur = &Expected{Input: strings.TrimSpace(line[2:])}
		case cur == nil:
			err = fmt.Errorf("outside a block")
		case f[0] == "ERROR":
			cur.Err = strings.TrimSpace(strings.TrimPrefix(line, "ERROR"))
		case f[0] == "END":
			var count int
			if count, err = strconv.Atoi(f[len(f)-1]); err == nil && count != len(cur.Times) {
				err = fmt.Errorf("END %d after %d fire lines", count, len(cur.Times))
			}
			if err == nil {
				out = append(out, *cur)
				cur = nil
			}
		case f[0] == "REPEAT" && len(f) == 4:
			cur.HasRepeat = true
			if cur.Repeat, err = strconv.Atoi(f[1]); err == nil {
				cur.TimesTriggered, err = strconv.Atoi(f[3])
			}
		case f[0] == "NOW" || f[0] == "MISFIRED" || f[0] == "NEXT":
			cur.Misfire = true
			if len(f) < 2 || f[1] == "none" {
				break
			}
			var ms int64
			if ms, err = strconv.ParseInt(f[1], 10, 64); err == nil {
				switch f[0] {
				case "NOW":
					cur.Now = ms
				case "MISFIRED":
					cur.Missed = ms
				default:
					cur.Next, cur.HasNext = ms, true
				}
			}
		default:
			var ms int64
			if ms, err = strconv.ParseInt(f[0], 10, 64); err == nil {
				cur.Times = append(cur.Times, ms)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
	}
	return out, sc.Err()
}
