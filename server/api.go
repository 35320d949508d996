package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// apiError is the API's one error shape (api.Error); the short name keeps the handlers'
// error returns readable.
type apiError = api.Error

func invalidField(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf(format, args...)}
}

var (
	errUnauthenticated = &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated",
		Message: "authentication required: send Authorization: Bearer <token> or log in at POST /api/v1/auth/login"}
)

// ErrorOf is the one map of errors to the API's error shape and HTTP status, for the API's
// answers and the console's pages alike: an *api.Error as it is, the scheduler's field errors
// and the store's and context's errors by kind; anything else is an internal error (known is
// false: the caller logs it, the client sees "internal error").
func ErrorOf(err error) (e *api.Error, known bool) {
	var ae *apiError
	var fe *schedule.FieldError
	var ee *store.ExistsError
	switch {
	case errors.As(err, &ae):
		return ae, true
	case errors.As(err, &ee):
		// Its own message: the clauses the callers wrapped it in repeat its name.
		return &apiError{Status: http.StatusConflict, Code: "already_exists", Field: ee.Field, Message: ee.Error()}, true
	case errors.As(err, &fe):
		// The scheduler's checks name the field as the API does; its message is the cause
		// alone, as the field is reported beside it.
		if errors.Is(fe, store.ErrOutOfScope) {
			return &apiError{Status: http.StatusForbidden, Code: "permission_denied", Field: fe.Field, Message: fe.Err.Error()}, true
		}
		return &apiError{Status: http.StatusBadRequest, Code: api.CodeInvalidArgument, Field: fe.Field, Message: fe.Err.Error()}, true
	case errors.Is(err, store.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: err.Error()}, true
	case errors.Is(err, store.ErrAlreadyExists):
		return &apiError{Status: http.StatusConflict, Code: "already_exists", Message: err.Error()}, true
	case errors.Is(err, store.ErrInUse):
		return &apiError{Status: http.StatusConflict, Code: "failed_precondition", Message: err.Error()}, true
	case errors.Is(err, store.ErrConflict):
		return &apiError{Status: http.StatusConflict, Code: "aborted", Message: err.Error()}, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: err.Error()}, true
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}, false
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae, known := ErrorOf(err)
	if !known {
		// The client sees "internal error"; the log keeps what happened.
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sundial"`)
	}
	writeJSON(w, ae.Status, api.ErrorBody{Error: *ae})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent: a failed write has no one left to tell
}

// maxBody bounds request bodies; a job with its triggers is a few kilobytes.
const maxBody = 1 << 20

// decode reads a JSON body strictly: unknown fields and trailing data are errors that name
// the field, so a typo ("crom") is reported instead of silently ignored.
func decode(r *http.Request, v any) error {
	if err := decodeJSON(http.MaxBytesReader(nil, r.Body, maxBody), v); err != nil {
		return err
	}
	return checkInput(v)
}

// DecodeJSON reads a request of an operation from its JSON form as the API reads a body, so
// the console's forms (which map to the API's JSON) get the API's field errors.
func DecodeJSON(b []byte, v any) error {
	return decodeJSON(bytes.NewReader(b), v)
}

func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, io.EOF):
			return invalidField("", "request body: want a JSON object, got nothing")
		case errors.As(err, &te):
			return invalidField(jsonPath(te.Field), "want %s, got JSON %s", te.Type, te.Value)
		case errors.As(err, &se):
			return invalidField("", "request body: malformed JSON at offset %d: %v", se.Offset, err)
		case errors.As(err, &mbe):
			return invalidField("", "request body: larger than %d bytes", maxBody)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return invalidField(name, "unknown field")
		}
		return invalidField("", "request body: %v", err)
	}
	if dec.More() {
		return invalidField("", "request body: data after the JSON object")
	}
	return nil
}

// decodeOp reads an operation's JSON body; the operation checks its text (Execute).
func decodeOp(r *http.Request, v any) error {
	return decodeJSON(http.MaxBytesReader(nil, r.Body, maxBody), v)
}

// jsonPath turns encoding/json's "triggers.0.cron" into "triggers[0].cron".
func jsonPath(p string) string {
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, part := range parts {
		if _, err := strconv.Atoi(part); err == nil && i > 0 {
			b.WriteString("[" + part + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// pageLimit reads ?limit=.
func pageLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, invalidField("limit", "want an integer from 1 to %d, got %q", maxPageSize, v)
	}
	return n, nil
}

// idPage reads ?limit= and the ?after= id cursor of a list keyed by id.
func idPage(r *http.Request) (limit int, after int64, err error) {
	if limit, err = pageLimit(r); err != nil {
		return 0, 0, err
	}
	after, err = queryID(r, "after")
	return limit, after, err
}

// queryID reads an optional integer query parameter (0 when absent).
func queryID(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, invalidField(name, "want a non-negative integer, got %q", v)
	}
	return n, nil
}

// pathID reads an integer path parameter.
func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, invalidField(name, "want a positive integer id, got %q", v)
	}
	return n, nil
}

// pageOf pages a short list read whole (apps, nodes, executors: one row per process or
// group, not per fire) with the same limit and after cursor as the lists the database pages:
// the items in the order of their key, those after ?after=, cut to ?limit=.
func pageOf[T any](r *http.Request, items []T, key func(T) string) (api.Page[T], error) {
	limit, err := pageLimit(r)
	if err != nil {
		return api.Page[T]{}, err
	}
	after := r.URL.Query().Get("after")
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	if after != "" {
		items = items[sort.Search(len(items), func(i int) bool { return key(items[i]) > after }):]
	}
	return paginate(items, limit, key, func(t T) T { return t }), nil
}

// writePageOf is the HTTP answer of an operation that reads a short list whole: a page of it.
func writePageOf[T any](key func(T) string) func(http.ResponseWriter, *http.Request, *[]T) error {
	return func(w http.ResponseWriter, r *http.Request, items *[]T) error {
		page, err := pageOf(r, *items, key)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	}
}

// readAllOf reads the ?app= of a whole short list.
func readAllOf(r *http.Request, in *AllOf) error {
	in.App = r.URL.Query().Get("app")
	return nil
}

// cut trims rows an operation read with limit+1 to a page, and says whether more follow.
func cut[T any](rows []T, limit int) ([]T, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// pageOut is a page an operation read (more: another follows) in the API's form, its cursor
// the last row's.
func pageOut[R, T any](rows []R, more bool, cursor func(R) string, conv func(R) T) api.Page[T] {
	p := paginate(rows, len(rows), cursor, conv)
	if more && len(rows) > 0 {
		c := cursor(rows[len(rows)-1])
		p.Next = &c
	}
	return p
}

// paginate trims rows fetched with limit+1 to a page and sets the cursor when more follow.

func paginate[R, T any](rows []R, limit int, cursor func(R) string, conv func(R) T) api.Page[T] {
	p := api.Page[T]{Items: make([]T, 0, min(len(rows), limit))}
	if len(rows) > limit {
		rows = rows[:limit]
		c := cursor(rows[len(rows)-1])
		p.Next = &c
	}
	for _, r := range rows {
		p.Items = append(p.Items, conv(r))
	}
	return p
}
