package api

import "time"

// Time is an instant as the API writes it: RFC 3339 in UTC with milliseconds, or null for
// none. It holds Unix milliseconds (0 for none), as the store does.
type Time int64

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// TimeOf returns t as an API time (0 for the zero time).
func TimeOf(t time.Time) Time {
	if t.IsZero() {
		return 0
	}
	return Time(t.UnixMilli())
}

// Time returns the instant, or the zero time for none.
func (t Time) Time() time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(t))
}

// IsZero reports whether the time is absent (null).
func (t Time) IsZero() bool { return t == 0 }

func (t Time) MarshalJSON() ([]byte, error) {
	if t == 0 {
		return []byte("null"), nil
	}
	return []byte(`"` + time.UnixMilli(int64(t)).UTC().Format(timeLayout) + `"`), nil
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = 0
		return nil
	}
	v, err := time.Parse(`"`+time.RFC3339Nano+`"`, string(b))
	if err != nil {
		return err
	}
	*t = Time(v.UnixMilli())
	return nil
}
