package quartz

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/sundial-scheduler/sundial/internal/javaser"
	"github.com/sundial-scheduler/sundial/schedule"
)

// decodeJobData reads a JOB_DATA column: empty, a java.util.Properties text
// (useProperties=true: Properties.store's format) or a Java-serialized JobDataMap
// (useProperties=false), whose values must all be strings to map onto a Sundial job's data.
func decodeJobData(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) >= 2 && b[0] == 0xAC && b[1] == 0xED {
		return decodeSerializedMap(b)
	}
	return parseProperties(b)
}

func decodeSerializedMap(b []byte) (map[string]any, error) {
	v, err := javaser.ParseObject(b)
	if err != nil {
		return nil, fmt.Errorf("a serialized job data map that cannot be read: %w", err)
	}
	o, ok := v.(*javaser.Object)
	if !ok {
		return nil, fmt.Errorf("the blob holds %s, not a job data map", javaser.Describe(v))
	}
	inner := any(o)
	if o.Class.Is("org.quartz.utils.DirtyFlagMap") {
		inner, _ = o.Field("map")
	}
	entries, err := javaser.Map(inner)
	if err != nil {
		return nil, fmt.Errorf("the job data map: %w", err)
	}
	out := make(map[string]any, len(entries))
	for _, e := range entries {
		k, ok := e.Key.(string)
		if !ok {
			return nil, fmt.Errorf("a job data key is %s, not a string", javaser.Describe(e.Key))
		}
		s, ok := e.Value.(string)
		if !ok {
			return nil, fmt.Errorf("job data %q is %s, not a string (the store has useProperties=false; "+
				"Sundial keeps job data as JSON and cannot tell what the Java object meant)", k, javaser.Describe(e.Value))
		}
		out[k] = s
	}
	return out, nil
}

// parseProperties reads java.util.Properties' text format (ISO 8859-1 with \uXXXX escapes).
func parseProperties(b []byte) (map[string]any, error) {
	out := map[string]any{}
	// Join continuation lines first: a line ending in an odd number of backslashes continues.
	var logical []string
	var cur strings.Builder
	for _, raw := range bytes.Split(b, []byte("\n")) {
		line := strings.TrimRight(latin1(raw), "\r")
		if cur.Len() > 0 {
			line = strings.TrimLeft(line, " \t\f")
		} else if t := strings.TrimLeft(line, " \t\f"); t == "" || t[0] == '#' || t[0] == '!' {
			continue
		}
		if n := len(line) - len(strings.TrimRight(line, `\`)); n%2 == 1 {
			cur.WriteString(line[:len(line)-1])
			continue
		}
		cur.WriteString(line)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		logical = append(logical, cur.String())
	}
	for _, line := range logical {
		line = strings.TrimLeft(line, " \t\f")
		// The key ends at the first unescaped '=', ':' or white space.
		end := len(line)
		for i := 0; i < len(line); i++ {
			if line[i] == '\\' {
				i++
				continue
			}
			if strings.IndexByte("=: \t\f", line[i]) >= 0 {
				end = i
				break
			}
		}
		key, rest := line[:end], strings.TrimLeft(line[end:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, err
		}
		v, err := unescapeProperty(rest)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var pending []uint16 // UTF-16 units from \u escapes, for surrogate pairs
	flush := func() {
		if len(pending) > 0 {
			b.WriteString(string(utf16.Decode(pending)))
			pending = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			flush()
			b.WriteByte('\t')
		case 'n':
			flush()
			b.WriteByte('\n')
		case 'r':
			flush()
			b.WriteByte('\r')
		case 'f':
			flush()
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("job data: malformed \\u escape in %q", s)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("job data: malformed \\u escape in %q", s)
			}
			pending = append(pending, uint16(n))
			i += 4
		default:
			flush()
			b.WriteByte(s[i])
		}
	}
	flush()
	return b.String(), nil
}

// loadZone reads a Java TimeZone ID: an IANA name, UTC/GMT, or a custom GMT+hh:mm.
func loadZone(id string) (*time.Location, error) {
	switch id {
	case "UTC", "GMT", "Z":
		return time.UTC, nil
	}
	if rest, ok := strings.CutPrefix(id, "GMT"); ok && (strings.HasPrefix(rest, "+") || strings.HasPrefix(rest, "-")) {
		return schedule.LoadZone(rest)
	}
	loc, err := schedule.LoadZone(id)
	if err != nil {
		//lint:ignore ST1005 Java is a proper name
		return nil, fmt.Errorf("Java time zone %q is not an IANA zone Sundial knows", id)
	}
	return loc, nil
}
