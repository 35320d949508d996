package api

import (
	"errors"
	"net/http"
)

// Error is every error the API returns, in one JSON shape:
//
//	{"error": {"code": "invalid_argument", "message": "...", "field": "triggers[0].cron"}}
//
// The client returns it for every answer that is not 2xx.
type Error struct {
	// Status is the HTTP status; it is not in the body.
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the offending input, as a path into the request body or a query
	// parameter name.
	Field string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// ErrorBody is the body of an error answer.
type ErrorBody struct {
	Error Error `json:"error"`
}

// CodeInvalidArgument is the code of a 400: bad input, named by Field.
const CodeInvalidArgument = "invalid_argument"

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// StatusOf returns the HTTP status of an API error, or 0 when err is not one.
func StatusOf(err error) int {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}
