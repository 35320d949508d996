package schedule

import (
	"errors"
	"fmt"
)

// FieldError is bad input in one named field of what a caller gave: "end", "misfire",
// "cron". A caller that holds the input in a larger structure nests the field under its own
// path with In ("triggers[0]" + "end"), so an API can report the exact path it was given
// without matching on message texts.
type FieldError struct {
	// Field names the input, in the names of Sundial's REST API (snake_case, dotted paths
	// and [i] indexes).
	Field string
	Err   error
}

// Fieldf returns a FieldError for field with a formatted message.
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// In returns the error with its field nested under prefix ("triggers[0]"); an empty prefix
// leaves it alone.
func (e *FieldError) In(prefix string) *FieldError {
	if prefix == "" {
		return e
	}
	if e.Field == "" {
		return &FieldError{Field: prefix, Err: e.Err}
	}
	return &FieldError{Field: prefix + "." + e.Field, Err: e.Err}
}

// AsField returns the FieldError in err's chain, if any.
func AsField(err error) (*FieldError, bool) {
	var fe *FieldError
	ok := errors.As(err, &fe)
	return fe, ok
}
