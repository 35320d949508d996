package schedule

import (
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf16"
)

// The parser follows Quartz 2.3.2's CronExpression parser decision by decision, because
// "accept exactly what Quartz accepts" includes its leniency: a value is read from the front
// and whatever follows the part Quartz understood is dropped. Quartz works on the upper-cased
// expression as UTF-16 code units, so the parser does too; offsets map back to bytes.

// Field indexes, in expression order.
const (
	cronSecond = iota
	cronMinute
	cronHour
	cronDOM
	cronMonth
	cronDOW
	cronYear
)

// Quartz's marker values for '*' and '?', stored in the sets like any other value.
const (
	cronAllSpec = 99
	cronNoSpec  = 98
)

var cronMonthNames = map[string]int{
	"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
	"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12,
}

var cronDayNames = map[string]int{
	"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7,
}

type cronParser struct {
	c         *Cron
	src       string
	u         []uint16 // the upper-cased expression
	off       []int    // off[i] is the byte offset in src of u[i]; off[len(u)] == len(src)
	field     int
	base      int // index in u of the value being parsed
	dowMinSet bool
}

// cronParse parses expr; the caller sets the location.
func cronParse(expr string) (*Cron, error) {
	p := &cronParser{c: &Cron{}, src: expr}
	p.encode()
	c := p.c

	var tokens []string
	var tokenStart [cronYear + 1]int
	i := 0
	for i < len(p.u) {
		for i < len(p.u) && (p.u[i] == ' ' || p.u[i] == '\t') {
			i++
		}
		if i == len(p.u) {
			break
		}
		start := i
		for i < len(p.u) && p.u[i] != ' ' && p.u[i] != '\t' {
			i++
		}
		if p.field > cronYear {
			c.warnf("%q after the year field is ignored", p.src[p.off[start]:])
			break
		}
		tokenStart[p.field] = p.off[start]
		tokens = append(tokens, string(utf16.Decode(p.u[start:i])))
		if err := p.parseField(start, i); err != nil {
			return nil, err
		}
		p.field++
	}
	if p.field <= cronDOW {
		return nil, &CronError{Field: "expression", Pos: len(expr), Msg: "unexpected end of expression: 6 or 7 fields are required"}
	}
	if p.field == cronYear {
		p.base = len(p.u)
		if err := p.addToSet(cronAllSpec, -1, 0, false); err != nil {
			return nil, err
		}
	}
	c.expr = cronNormalForm(tokens)

	c.domNoSpec = c.dom.has(cronNoSpec)
	c.dowNoSpec = c.dow.has(cronNoSpec)
	if c.domNoSpec == c.dowNoSpec {
		msg := "support for specifying both a day-of-week AND a day-of-month parameter is not implemented: exactly one of them must be '?'"
		if c.domNoSpec {
			msg = "day-of-month and day-of-week are both '?': exactly one of them must be"
		}
		return nil, &CronError{Field: "day-of-week", Pos: tokenStart[cronDOW], Msg: msg}
	}
	return c, p.checkRunnable(tokenStart)
}

// checkRunnable rejects what Quartz's parser lets through but its getTimeAfter then fails on
// (an empty set throws NoSuchElementException) or never returns from (W on day 0).
func (p *cronParser) checkRunnable(tokenStart [cronYear + 1]int) error {
	c := p.c
	empty := func(f int) error {
		return &CronError{Field: cronFieldNames[f], Pos: tokenStart[f], Msg: "the field has no values (Quartz accepts it and then fails at run time)"}
	}
	for f, s := range [...]*cronSet{cronSecond: &c.sec, cronMinute: &c.min, cronHour: &c.hour, cronMonth: &c.month} {
		if s != nil && s.empty() {
			return empty(f)
		}
	}
	if c.dowNoSpec { // day-of-month rules
		if !c.lastDOM && c.dom.empty() {
			return empty(cronDOM)
		}
		if c.lastDOM && c.nearestWeekday && c.lastDOMOffset >= 28 {
			return &CronError{Field: "day-of-month", Pos: tokenStart[cronDOM], Msg: fmt.Sprintf("L-%dW falls before the first of February (Quartz never returns)", c.lastDOMOffset)}
		}
		if !c.lastDOM && c.nearestWeekday {
			if c.dom.first() == 0 {
				return &CronError{Field: "day-of-month", Pos: tokenStart[cronDOM], Msg: "0W: the weekday nearest day 0 does not exist (Quartz never returns)"}
			}
			if c.dom.count() > 1 {
				c.warnf("day-of-month: with W only the smallest day, %dW, is used; the other days are ignored", c.dom.first())
			}
		}
	} else {
		if !p.dowMinSet {
			return empty(cronDOW)
		}
		if (c.lastDOW || c.nthDOW != 0) && c.dow.count() > 1 {
			c.warnf("day-of-week: with L or # only the smallest day, %d, is used; the other days are ignored", c.dowFirst)
		}
		if (c.lastDOW || c.nthDOW != 0) && (c.dowFirst < 1 || c.dowFirst > 7) {
			c.warnf("day-of-week: %d is not a day of the week; Quartz computes with it anyway", c.dowFirst)
		}
	}
	if c.years.empty() {
		c.warnf("year: the field has no values, so the expression never fires")
	}
	return nil
}

// encode upper-cases src into UTF-16 as Java's toUpperCase does for the characters that can
// matter, remembering each unit's byte offset.
func (p *cronParser) encode() {
	for b, r := range p.src {
		r = unicode.ToUpper(r)
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			p.u = append(p.u, uint16(r1), uint16(r2))
			p.off = append(p.off, b, b)
			continue
		}
		p.u = append(p.u, uint16(r))
		p.off = append(p.off, b)
	}
	p.off = append(p.off, len(p.src))
}

func (p *cronParser) str(from, to int) string {
	return string(utf16.Decode(p.u[from:to]))
}

// parseField parses the token u[start:end] as field p.field.
func (p *cronParser) parseField(start, end int) error {
	// Java's trim(): control characters at either end are dropped.
	for start < end && p.u[start] <= ' ' {
		start++
	}
	for end > start && p.u[end-1] <= ' ' {
		end--
	}
	tok := p.u[start:end]
	hasL, commas, hashes := false, 0, 0
	for _, ch := range tok {
		switch ch {
		case 'L':
			hasL = true
		case ',':
			commas++
		case '#':
			hashes++
		}
	}
	if p.field == cronDOM && hasL && len(tok) > 1 && commas > 0 {
		return p.errAt(start, "L and LW cannot be combined with other days of the month")
	}
	if p.field == cronDOW && hasL && len(tok) > 1 && commas > 0 {
		return p.errAt(start, "L cannot be combined with other days of the week")
	}
	if p.field == cronDOW && hashes > 1 {
		return p.errAt(start, "only one n#k (nth day of the week) is supported")
	}
	if len(tok) > 0 && (tok[0] == ',' || tok[len(tok)-1] == ',') || cronHasEmptyItem(tok) {
		p.c.warnf("%s: empty list items in %q are ignored", cronFieldNames[p.field], p.str(start, end))
	}
	i := start
	for i < end {
		if p.u[i] == ',' {
			i++
			continue
		}
		j := i
		for j < end && p.u[j] != ',' {
			j++
		}
		p.base = i
		if err := p.value(p.u[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func cronHasEmptyItem(tok []uint16) bool {
	for i := 1; i < len(tok); i++ {
		if tok[i] == ',' && tok[i-1] == ',' {
			return true
		}
	}
	return false
}

func (p *cronParser) errAt(i int, format string, args ...any) *CronError {
	if i > len(p.u) {
		i = len(p.u)
	}
	return &CronError{Field: cronFieldNames[p.field], Pos: p.off[i], Msg: fmt.Sprintf(format, args...)}
}

// err reports a problem at offset i of the current value.
func (p *cronParser) err(i int, format string, args ...any) *CronError {
	return p.errAt(p.base+i, format, args...)
}

// ignored records that Quartz drops s[i:].
func (p *cronParser) ignored(s []uint16, i int, read string) {
	if i < len(s) {
		p.c.warnf("%s: %q after %q is ignored (Quartz reads %s)", cronFieldNames[p.field],
			string(utf16.Decode(s[i:])), string(utf16.Decode(s[:i])), read)
	}
}

func (p *cronParser) name(sub []uint16) string { return string(utf16.Decode(sub)) }

// value parses one list item (Quartz's storeExpressionVals).
func (p *cronParser) value(s []uint16) error {
	c := p.c
	ch := s[0]
	if ch >= 'A' && ch <= 'Z' && !cronIsLastDay(s) {
		return p.named(s)
	}
	switch {
	case ch == '?':
		if len(s) > 2 {
			return p.err(1, "illegal character after '?': %q", rune(s[1]))
		}
		if p.field != cronDOM && p.field != cronDOW {
			return p.err(0, "'?' can only be specified for day-of-month or day-of-week")
		}
		if p.field == cronDOW && !c.lastDOM {
			if c.dom.empty() {
				return p.err(0, "day-of-month has no values")
			}
			if last := cronSetLast(c.dom); last == cronNoSpec {
				return p.err(0, "'?' can only be specified for day-of-month -OR- day-of-week")
			}
		}
		p.ignored(s, 1, "'?'")
		return p.addToSet(cronNoSpec, -1, 0, false)
	case ch == '*' || ch == '/':
		if ch == '*' && len(s) == 1 {
			return p.addToSet(cronAllSpec, -1, 0, false)
		}
		if ch == '/' && len(s) == 1 {
			return p.err(0, "'/' must be followed by an integer")
		}
		i := 0
		if ch == '*' {
			i = 1
		}
		incr := 1
		if s[i] == '/' {
			i++
			if i >= len(s) {
				return p.err(i, "unexpected end of value after '/'")
			}
			n, ok := cronParseInt(s[i:])
			if !ok {
				return p.err(i, "%q is not an integer", p.name(s[i:]))
			}
			if err := p.checkIncrement(n, i); err != nil {
				return err
			}
			if n <= 0 {
				c.warnf("%s: increment %d in %q is read as 1 (every value)", cronFieldNames[p.field], n, p.name(s))
			}
			incr = n
		} else {
			p.ignored(s, i, "'*'")
		}
		return p.addToSet(cronAllSpec, -1, incr, false)
	case ch == 'L':
		return p.last(s)
	case ch >= '0' && ch <= '9':
		val := int(ch - '0')
		if len(s) == 1 {
			return p.addToSet(val, -1, -1, true)
		}
		i := 1
		if s[1] >= '0' && s[1] <= '9' {
			var ok bool
			if val, i, ok = cronGetValue(val, s, 1); !ok {
				return p.err(0, "number out of range")
			}
		}
		return p.checkNext(i, s, val)
	default:
		return p.err(0, "unexpected character %q", rune(ch))
	}
}

// cronIsLastDay reports whether s is L, LW or matches ^L-[0-9]*W?$, which Quartz does not read
// as a name.
func cronIsLastDay(s []uint16) bool {
	if len(s) == 0 || s[0] != 'L' {
		return false
	}
	if len(s) == 1 || len(s) == 2 && s[1] == 'W' {
		return true
	}
	if s[1] != '-' {
		return false
	}
	rest := s[2:]
	if len(rest) > 0 && rest[len(rest)-1] == 'W' {
		rest = rest[:len(rest)-1]
	}
	for _, ch := range rest {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

func cronSetLast(s cronSet) int {
	last := -1
	for v := 0; v <= cronSetMax; v++ {
		if s.has(v) {
			last = v
		}
	}
	return last
}

// named parses a value that starts with a letter: a month or day name.
func (p *cronParser) named(s []uint16) error {
	c := p.c
	if len(s) < 3 {
		return p.err(0, "%q is not a name (names have three letters)", p.name(s))
	}
	lookup := cronDayNames
	what := "day-of-week"
	switch p.field {
	case cronMonth:
		lookup, what = cronMonthNames, "month"
	case cronDOW:
	default:
		return p.err(0, "illegal characters for this position: %q", p.name(s[:3]))
	}
	sval, ok := lookup[p.name(s[:3])]
	if !ok {
		return p.err(0, "invalid %s value %q", what, p.name(s[:3]))
	}
	eval, read := -1, 3
	if len(s) > 3 {
		switch {
		case s[3] == '-':
			if len(s) < 7 {
				return p.err(4, "a name must follow '-'")
			}
			if eval, ok = lookup[p.name(s[4:7])]; !ok {
				return p.err(4, "invalid %s value %q", what, p.name(s[4:7]))
			}
			read = 7
		case s[3] == '#' && p.field == cronDOW:
			n, ok := cronParseInt(s[4:])
			if !ok || n < 1 || n > 5 {
				return p.err(4, "a numeric value between 1 and 5 must follow the '#' option")
			}
			c.nthDOW = n
			read = len(s)
		case s[3] == 'L' && p.field == cronDOW:
			c.lastDOW = true
			read = 4
			c.warnf("day-of-week: %q is read as %dL (the last %s of the month)", p.name(s[:4]), sval, p.name(s[:3]))
		}
	}
	p.ignored(s, read, fmt.Sprintf("%q", p.name(s[:read])))
	incr := 0
	if eval != -1 {
		incr = 1
	}
	return p.addToSet(sval, eval, incr, false)
}

// last parses a value starting with L that Quartz does not read as a name.
func (p *cronParser) last(s []uint16) error {
	c := p.c
	i := 1
	switch p.field {
	case cronDOW:
		if err := p.addToSet(7, 7, 0, false); err != nil {
			return err
		}
		p.ignored(s, 1, "L, i.e. 7 (Saturday)")
		return nil
	case cronDOM:
	default:
		c.warnf("%s: L means nothing here and is ignored", cronFieldNames[p.field])
		return nil
	}
	c.lastDOM = true
	if len(s) > i && s[i] == '-' {
		if i+1 >= len(s) {
			return p.err(i+1, "a number must follow 'L-'")
		}
		off, pos, ok := cronGetValue(0, s, i+1)
		if !ok {
			return p.err(i+1, "number out of range")
		}
		if off > 30 {
			return p.err(i+1, "offset from last day must be <= 30")
		}
		if off == 0 {
			c.warnf("day-of-month: %q has offset 0, so it is the same as without \"-0\"", p.name(s))
		}
		c.lastDOMOffset = off
		i = pos
	}
	if len(s) > i && s[i] == 'W' {
		c.nearestWeekday = true
	}
	return nil
}

// checkNext parses what follows the number val at s[i:].
func (p *cronParser) checkNext(i int, s []uint16, val int) error {
	c := p.c
	if i >= len(s) {
		return p.addToSet(val, -1, -1, true)
	}
	switch s[i] {
	case 'L':
		if p.field != cronDOW {
			return p.err(i, "'L' option is not valid here")
		}
		if val < 1 || val > 7 {
			return p.err(0, "day-of-week values must be between 1 and 7")
		}
		c.lastDOW = true
		p.addDirect(val)
		p.ignored(s, i+1, fmt.Sprintf("%dL", val))
		return nil
	case 'W':
		if p.field != cronDOM {
			return p.err(i, "'W' option is not valid here")
		}
		if val > 31 {
			return p.err(i, "the 'W' option does not make sense with values larger than 31")
		}
		c.nearestWeekday = true
		p.addDirect(val)
		p.ignored(s, i+1, fmt.Sprintf("%dW", val))
		return nil
	case '#':
		if p.field != cronDOW {
			return p.err(i, "'#' option is not valid here")
		}
		n, ok := cronParseInt(s[i+1:])
		if !ok || n < 1 || n > 5 {
			return p.err(i+1, "a numeric value between 1 and 5 must follow the '#' option")
		}
		c.nthDOW = n
		p.addDirect(val)
		return nil
	case '-':
		i++
		if i >= len(s) {
			return p.err(i, "a number must follow '-'")
		}
		end, ok := cronDigit(s[i])
		if !ok {
			return p.err(i, "a number must follow '-'")
		}
		i++
		if i >= len(s) {
			return p.addToSet(val, end, 1, true)
		}
		if s[i] >= '0' && s[i] <= '9' {
			if end, i, ok = cronGetValue(end, s, i); !ok {
				return p.err(i, "number out of range")
			}
		}
		if i < len(s) && s[i] == '/' {
			i++
			if i >= len(s) {
				return p.err(i, "'/' must be followed by an integer")
			}
			incr, ok := cronDigit(s[i])
			if !ok {
				return p.err(i, "'/' must be followed by an integer")
			}
			i++
			if i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if incr, i, ok = cronGetValue(incr, s, i); !ok {
					return p.err(i, "number out of range")
				}
			}
			p.ignored(s, i, "the range and step before it")
			return p.addToSet(val, end, incr, true)
		}
		p.ignored(s, i, "the range before it")
		return p.addToSet(val, end, 1, true)
	case '/':
		if i+1 >= len(s) {
			return p.err(i, "'/' must be followed by an integer")
		}
		i++
		at := i
		incr, ok := cronDigit(s[i])
		if !ok {
			return p.err(i, "'/' must be followed by an integer")
		}
		i++
		if i < len(s) {
			if s[i] < '0' || s[i] > '9' {
				return p.err(i, "unexpected character %q after '/'", rune(s[i]))
			}
			if incr, i, ok = cronGetValue(incr, s, i); !ok {
				return p.err(i, "number out of range")
			}
			p.ignored(s, i, "the step before it")
		}
		if err := p.checkIncrement(incr, at); err != nil {
			return err
		}
		if incr == 0 {
			c.warnf("%s: step 0 in %q leaves the single value %d", cronFieldNames[p.field], p.name(s), val)
		}
		return p.addToSet(val, -1, incr, true)
	default:
		p.ignored(s, i, fmt.Sprintf("%d", val))
		return p.addToSet(val, -1, 0, true)
	}
}

func (p *cronParser) checkIncrement(incr, i int) error {
	limit := [...]int{cronSecond: 59, cronMinute: 59, cronHour: 23, cronDOM: 31, cronMonth: 12, cronDOW: 7, cronYear: math.MaxInt32}[p.field]
	if incr > limit {
		return p.err(i, "increment %d is larger than the field allows (%d)", incr, limit)
	}
	return nil
}

// addDirect stores val without Quartz's range checks, as its L, W and # paths do.
func (p *cronParser) addDirect(val int) {
	c := p.c
	if p.field == cronDOW {
		if !p.dowMinSet || val < c.dowFirst {
			c.dowFirst, p.dowMinSet = val, true
		}
		if val > cronSetMax {
			return // only dowFirst matters with n#k
		}
	}
	p.set().add(val)
}

func (p *cronParser) set() *cronSet {
	c := p.c
	return [...]*cronSet{&c.sec, &c.min, &c.hour, &c.dom, &c.month, &c.dow}[p.field]
}

var cronFieldBounds = [...][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}, {1970, cronLastYear}}

// addToSet is Quartz's addToSet: the range val..end (end -1: to the field's maximum) in steps
// of incr; incr 0 or -1 means the single value val. number says val was written as a number.
func (p *cronParser) addToSet(val, end, incr int, number bool) error {
	c, f := p.c, p.field
	lo, hi := cronFieldBounds[f][0], cronFieldBounds[f][1]
	special := val == cronAllSpec || (val == cronNoSpec && (f == cronDOM || f == cronDOW))
	if f != cronYear && !special {
		bad := val < lo || val > hi || end > hi
		if f == cronDOW {
			bad = val == 0 || val > hi || end > hi
		}
		if bad {
			return p.err(0, "%s values must be between %d and %d", cronFieldNames[f], lo, hi)
		}
	}
	if number && special {
		what := "'*'"
		if val == cronNoSpec {
			what = "'?'"
		}
		c.warnf("%s: %d is Quartz's internal marker for %s and is read as such", cronFieldNames[f], val, what)
	}
	if (incr == 0 || incr == -1) && val != cronAllSpec {
		return p.add(val)
	}
	if val == cronAllSpec && incr <= 0 {
		incr = 1
		if err := p.add(cronAllSpec); err != nil {
			return err
		}
	}
	start, stop := val, end
	if stop == -1 {
		stop = hi
	}
	if start == cronAllSpec || start == -1 {
		start = lo
	}
	mod := 0
	if stop < start {
		if f == cronYear {
			return p.err(0, "start year must be less than stop year")
		}
		mod = hi + 1
		if f == cronDOM || f == cronMonth || f == cronDOW {
			mod = hi
		}
		stop += mod
	}
	if f == cronYear && stop > cronLastYear {
		stop = cronLastYear // later years are never reached
	}
	for v := start; v <= stop; v += incr {
		x := v
		if mod != 0 {
			x = v % mod
			if x == 0 && (f == cronDOM || f == cronMonth || f == cronDOW) {
				x = mod
			}
		}
		if err := p.add(x); err != nil {
			return err
		}
	}
	return nil
}

func (p *cronParser) add(v int) error {
	if p.field == cronYear {
		p.c.years.add(v)
		return nil
	}
	if v > cronSetMax {
		return p.err(0, "value %d: Sundial keeps values up to %d only (Quartz would accept it)", v, cronSetMax)
	}
	p.addDirect(v)
	return nil
}

// cronGetValue reads the decimal digits at s[i:] after the leading digit v (Quartz's
// getValue). pos is where reading stopped; ok is false when the number overflows an int32.
func cronGetValue(v int, s []uint16, i int) (val, pos int, ok bool) {
	digits := strconv.Itoa(v)
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		digits += string(rune(s[i]))
		i++
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	return int(n), i, err == nil
}

// cronParseInt is Java's Integer.parseInt: an optional sign, then decimal digits of any script.
func cronParseInt(s []uint16) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
		if len(s) == 0 {
			return 0, false
		}
	}
	n := int64(0)
	for _, ch := range s {
		d, ok := cronDigit(ch)
		if !ok {
			return 0, false
		}
		n = n*10 + int64(d)
		if n > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, false
	}
	return int(n), true
}

// cronDigit is Java's Character.digit(ch, 10): any Unicode decimal digit counts.
func cronDigit(ch uint16) (int, bool) {
	if ch >= '0' && ch <= '9' {
		return int(ch - '0'), true
	}
	r := rune(ch)
	if utf16.IsSurrogate(r) || !unicode.IsDigit(r) {
		return 0, false
	}
	// Decimal digits come in runs of ten starting at zero.
	n := 0
	for unicode.IsDigit(r - rune(n) - 1) {
		n++
	}
	return n % 10, true
}
