package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/store"
)

// InputLimits bound what jobs may ask of the scheduler. Zero fields mean no limit. (The
// shortest interval between fires is the scheduler's: Config.Scheduler.MinInterval.)
type InputLimits struct {
	// MaxJobsPerApp caps the jobs of one app (executor group), so that one team's
	// automation cannot flood the scheduler. Checked before a job is created or moved to
	// the app; two creations at once may pass it by one.
	MaxJobsPerApp int
}

// checkAppQuota refuses a job for app when the app has its quota of jobs already (other
// than the job except, which is being updated).
func (s *Server) checkAppQuota(ctx context.Context, app string, except int64) error {
	max := s.cfg.Input.MaxJobsPerApp
	if max <= 0 || app == "" {
		return nil
	}
	js, err := s.store.JobList(ctx, store.JobFilter{App: app, Limit: max + 1})
	if err != nil {
		return fmt.Errorf("count jobs of app %q: %w", app, err)
	}
	n := 0
	for _, j := range js {
		if j.ID != except {
			n++
		}
	}
	if n >= max {
		return &apiError{Status: http.StatusConflict, Code: "resource_exhausted", Field: "app",
			Message: fmt.Sprintf("app %q has %d jobs, the most this server allows per app (--max-jobs-per-app)", app, max)}
	}
	return nil
}

// Limits of request text, the same on every database: names fit the smallest name column
// (MySQL's varchar(190)), other text MySQL's text column (64 KiB).
const (
	maxNameLen = 190
	maxTextLen = 65535
)

// nameFields are the JSON fields that name things: printable text only, as they end up in
// logs, terminals and URLs.
var nameFields = map[string]bool{"name": true, "group": true, "app": true, "handler": true, "calendar": true,
	"base": true, "username": true, "time_zone": true, "routing": true, "concurrency": true, "misfire": true,
	"unit": true, "state": true, "address": true, "handlers": true, "title": true}

// checkInput refuses request strings that no database stores alike: a NUL (PostgreSQL
// refuses it), control characters in names, invalid UTF-8, names and texts longer than
// their columns; and Go ints past the 32-bit integer columns they are stored in. The error
// names the field by its JSON path.
func checkInput(v any) error {
	return walkInput(reflect.ValueOf(v), "", false)
}

// checkQuery checks a read's request as checkInput does, but its names are what something
// is looked up by (checkLookup): a read stores no name, and one stored before a rule
// tightened must stay reachable.
func checkQuery(v any) error {
	return walkInput(reflect.ValueOf(v), "", true)
}

func walkInput(v reflect.Value, path string, lookup bool) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walkInput(v.Elem(), path, lookup)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			p := path
			switch {
			case sf.Anonymous && name == "":
				// embedded: its fields are the parent's
			case name == "-":
				continue
			case name == "":
				p = joinPath(path, sf.Name)
			default:
				p = joinPath(path, name)
			}
			if err := walkInput(v.Field(i), p, lookup); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := walkInput(v.Index(i), fmt.Sprintf("%s[%d]", path, i), lookup); err != nil {
				return err
			}
		}
	case reflect.Map:
		// Free-form data (a job's data map) is stored as JSON, which escapes every control
		// character; only its keys and strings must be valid text.
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if err := checkText(joinPath(path, k), k, false); err != nil {
				return err
			}
			if err := walkInput(iter.Value(), joinPath(path, k), lookup); err != nil {
				return err
			}
		}
	case reflect.String:
		if lookup && nameFields[lastField(path)] {
			return checkLookup(path, v.String())
		}
		return checkText(path, v.String(), nameFields[lastField(path)])
	case reflect.Int:
		if n := v.Int(); n > math.MaxInt32 || n < math.MinInt32 {
			return invalidField(path, "%d is out of range (a 32-bit integer)", n)
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// lastField is the field name at the end of a path: "triggers[0].name" gives "name",
// "handlers[2]" gives "handlers".
func lastField(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

// checkText checks one string: valid UTF-8 without NUL; a name also printable as itself
// (sundial.CheckNameText: no control nor invisible format character) and at most
// maxNameLen characters, other text at most maxTextLen bytes.
func checkText(field, s string, name bool) error {
	if name {
		if err := checkLookup(field, s); err != nil {
			return err
		}
		return sundial.CheckNameText(field, s)
	}
	if !utf8.ValidString(s) {
		return invalidField(field, "must be valid UTF-8")
	}
	if len(s) > maxTextLen {
		return invalidField(field, "must have at most %d bytes, got %d", maxTextLen, len(s))
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return invalidField(field, "must not contain NUL bytes (found one at byte %d)", i)
	}
	return nil
}

// checkLookup checks a name something is looked up by: valid UTF-8, at most maxNameLen
// characters, no control character. Invisible format characters pass, so that a name stored
// before CheckNameText refused them can still be found, renamed or deleted.
func checkLookup(field, s string) error {
	if !utf8.ValidString(s) {
		return invalidField(field, "must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > maxNameLen {
		return invalidField(field, "must have at most %d characters, got %d", maxNameLen, n)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return invalidField(field, "must not contain control characters (found %q at byte %d)", s[i:i+1], i)
	}
	return nil
}

// checkRequestText refuses a path or query parameter with a control character, before a
// handler looks anything up with it: a NUL reaching PostgreSQL is a 500.
func checkRequestText(r *http.Request) error {
	if i := strings.IndexFunc(r.URL.Path, unicode.IsControl); i >= 0 {
		return invalidField("path", "must not contain control characters (found %q)", r.URL.Path[i:i+1])
	}
	for _, seg := range strings.Split(r.URL.Path, "/") {
		if n := utf8.RuneCountInString(seg); n > maxNameLen {
			return invalidField("path", "a name in the path has %d characters, at most %d are allowed", n, maxNameLen)
		}
	}
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			if err := checkLookup(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}
