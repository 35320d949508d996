package schedule

import "math/bits"

// cronSet is one field's set of values, 0..127. Quartz's sets also hold the markers 98 ('?')
// and 99 ('*'), and a lenient step can leave values above the field's range; getTimeAfter
// sees all of them, so the set keeps them too.
type cronSet [2]uint64

const cronSetMax = 127

func (s *cronSet) add(v int) { s[v>>6] |= 1 << (uint(v) & 63) }

func (s cronSet) has(v int) bool {
	return v >= 0 && v <= cronSetMax && s[v>>6]&(1<<(uint(v)&63)) != 0
}

func (s cronSet) empty() bool { return s[0]|s[1] == 0 }

func (s cronSet) count() int { return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) }

// next is the smallest value >= v (TreeSet.tailSet(v).first()).
func (s cronSet) next(v int) (int, bool) {
	if v < 0 {
		v = 0
	}
	if v < 64 {
		if w := s[0] >> uint(v); w != 0 {
			return v + bits.TrailingZeros64(w), true
		}
		v = 64
	}
	if v <= cronSetMax {
		if w := s[1] >> uint(v-64); w != 0 {
			return v + bits.TrailingZeros64(w), true
		}
	}
	return 0, false
}

// first is the smallest value; the set must not be empty.
func (s cronSet) first() int {
	v, _ := s.next(0)
	return v
}

// cronYears holds the year values 0..cronLastYear. Quartz gives up on any year past 2999, so
// larger values can never be reached and are not kept.
type cronYears [cronLastYear/64 + 1]uint64

const cronLastYear = 2999

func (y *cronYears) add(v int) {
	if v >= 0 && v <= cronLastYear {
		y[v>>6] |= 1 << (uint(v) & 63)
	}
}

func (y *cronYears) empty() bool {
	for _, w := range y {
		if w != 0 {
			return false
		}
	}
	return true
}

// next is the smallest year >= v.
func (y *cronYears) next(v int) (int, bool) {
	if v < 0 {
		v = 0
	}
	for i := v >> 6; i < len(y); i++ {
		w := y[i]
		if i == v>>6 {
			w &= ^uint64(0) << (uint(v) & 63)
		}
		if w != 0 {
			return i<<6 + bits.TrailingZeros64(w), true
		}
	}
	return 0, false
}
