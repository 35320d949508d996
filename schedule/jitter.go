package schedule

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// MaxJitter bounds a trigger's jitter: a fire held longer than a day past its scheduled time
// would be a different schedule, not a spread one.
const MaxJitter = 24 * time.Hour

// JitterOffset is how long after its scheduled time a fire of trigger id starts when the
// trigger spreads its fires over max: a value in [0, max) in whole milliseconds, derived from
// the trigger and the scheduled time alone, so every node, a restarted one and a recovery of
// the fire compute the same. The fire's key stays the scheduled time.
func JitterOffset(id int64, scheduled time.Time, max time.Duration) time.Duration {
	ms := max.Milliseconds()
	if ms <= 0 {
		return 0
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(id))
	binary.BigEndian.PutUint64(b[8:], uint64(scheduled.UnixMilli()))
	h := fnv.New64a()
	h.Write(b[:]) // cannot fail
	return time.Duration(h.Sum64()%uint64(ms)) * time.Millisecond
}

// ValidateJitter reports a jitter (in milliseconds) that is negative or longer than
// MaxJitter, as a *FieldError naming jitter_ms.
func ValidateJitter(ms int64) error {
	if ms < 0 || ms > MaxJitter.Milliseconds() {
		return Fieldf("jitter_ms", "want 0 (none) up to %d (%s), got %d", MaxJitter.Milliseconds(), MaxJitter, ms)
	}
	return nil
}
