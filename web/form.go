package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// The editor's inputs are named by the API's field paths ("triggers[0].cron"), so an error the
// API names a field for lands at that input, and a form maps to the API's JSON by a table of
// field kinds instead of hand-written copying.

type fieldKind int

const (
	text fieldKind = iota
	integer
	boolean
	lines    // a list of strings, one per line
	jsonText // a JSON object
	idList   // job ids separated by commas or spaces
	words    // a list of strings separated by commas or spaces (zones)
)

type field struct {
	path string
	kind fieldKind
}

var jobFields = []field{
	{"group", text}, {"name", text}, {"description", text}, {"handler", text}, {"app", text}, {"routing", text},
	{"params", text}, {"params_secret", boolean}, {"script_note", text}, {"data", jsonText}, {"concurrency", text}, {"max_concurrent", integer}, {"pause_after_failures", integer}, {"persist_data", boolean},
	{"requests_recovery", boolean}, {"timeout_ms", integer}, {"max_retries", integer},
	{"retry_backoff_ms", integer}, {"dispatch_timeout_ms", integer}, {"alarm_targets", lines}, {"child_job_ids", idList},
	{"alarm_policy.threshold", integer}, {"alarm_policy.window_ms", integer}, {"alarm_policy.silence_ms", integer},
	{"alarm_policy.recovery", boolean},
}

// triggerKinds are the schedule forms of the editor; each names the fields it sends.
var triggerKinds = map[string][]field{
	"cron":   {{"cron", text}},
	"simple": {{"every_ms", integer}, {"repeat", integer}},
	"once":   {},
	"calendar_interval": {{"calendar_interval.interval", integer}, {"calendar_interval.unit", text},
		{"calendar_interval.preserve_hour", boolean}, {"calendar_interval.skip_day", boolean}},
	"daily_interval": {{"daily_interval.from", text}, {"daily_interval.to", text}, {"daily_interval.interval", integer},
		{"daily_interval.unit", text}, {"daily_interval.days", text}, {"daily_interval.repeat", integer}},
}

// triggerCommon are the fields every trigger kind sends.
var triggerCommon = []field{
	{"name", text}, {"time_zone", text}, {"start", text}, {"end", text}, {"calendar", text}, {"priority", integer},
	{"misfire", text}, {"jitter_ms", integer}, {"dst", text}, {"catchup_window", text}, {"catchup", text}, {"remaining_runs", integer},
	{"zones", words},
}

// Form is a form's values and errors by field path; Prefix is where the trigger's fields
// sit ("triggers[0]." in the new-job form, "" in the add-trigger form).
type Form struct {
	Values url.Values
	Errors map[string]string
	Prefix string
	// Fields, when set, are the paths the form has inputs for; unset, the job editor's.
	Fields []string
}

// V is the value of the trigger or job field path.
func (f Form) V(path string) string { return f.Values.Get(path) }

// E is the error shown at path.
func (f Form) E(path string) string { return f.Errors[path] }

// T and TE are V and E of a trigger field.
func (f Form) T(path string) string  { return f.Values.Get(f.Prefix + path) }
func (f Form) TE(path string) string { return f.Errors[f.Prefix+path] }

// TN is the input name of a trigger field.
func (f Form) TN(path string) string { return f.Prefix + path }

// TID is the element id of a trigger input, unique on a page that also has the job's form
// (the add-trigger form has no prefix, and its "name" is not the job's).
func (f Form) TID(path string) string {
	if f.Prefix == "" {
		return "trigger-" + fieldID(path)
	}
	return fieldID(f.Prefix + path)
}

// Checked reports a checkbox's state.
func (f Form) Checked(path string) bool { return f.Values.Get(path) == "true" }

// Kind is the selected trigger kind.
func (f Form) Kind() string {
	if k := f.Values.Get(f.Prefix + "kind"); k != "" {
		return k
	}
	return "cron"
}

// FormError is the error of no field: shown above the form.
func (f Form) FormError() string {
	var out []string
	for k, msg := range f.Errors {
		if !f.known(k) {
			if k != "" {
				msg = k + ": " + msg
			}
			out = append(out, msg)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// known reports whether the form has an input showing errors of path.
func (f Form) known(path string) bool {
	if f.Fields != nil {
		for _, fd := range f.Fields {
			if path == fd || strings.HasPrefix(path, fd+"[") {
				return true
			}
		}
		return false
	}
	for _, fd := range jobFields {
		if path == fd.path || strings.HasPrefix(path, fd.path+"[") {
			return true
		}
	}
	rest, ok := strings.CutPrefix(path, f.Prefix)
	if !ok {
		return false
	}
	for _, fd := range triggerCommon {
		if rest == fd.path {
			return true
		}
	}
	for _, fs := range triggerKinds {
		for _, fd := range fs {
			if rest == fd.path {
				return true
			}
		}
	}
	return false
}

// fieldPath maps an API error's field to the input that shows it: an alarm target's index
// goes to the list's textarea.
func fieldPath(apiField string) string {
	for _, list := range []string{"alarm_targets", "child_job_ids"} {
		if strings.HasPrefix(apiField, list+"[") {
			return list
		}
	}
	// A trigger's zones[i] (under its prefix) shows at its Zones input.
	if i := strings.Index(apiField, "zones["); i >= 0 && (i == 0 || apiField[i-1] == '.') {
		return apiField[:i+len("zones")]
	}
	return apiField
}

// formError is a value the form cannot turn into the API's JSON type.
type formError struct{ field, msg string }

func (e *formError) Error() string { return e.field + ": " + e.msg }

// put sets the JSON value of one field from the form, at its dotted path under obj.
func put(obj map[string]any, form url.Values, name string, fd field) error {
	// Browsers send a textarea's line breaks as CRLF; a script run by /bin/sh must keep LF.
	raw := strings.ReplaceAll(form.Get(name), "\r\n", "\n")
	var v any
	switch fd.kind {
	case text:
		if raw == "" {
			return nil
		}
		v = raw
	case integer:
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return &formError{name, fmt.Sprintf("want a whole number, got %q", raw)}
		}
		v = n
	case boolean:
		if raw != "true" {
			return nil
		}
		v = true
	case lines:
		var ls []string
		for _, l := range strings.Split(raw, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				ls = append(ls, l)
			}
		}
		v = ls
	case words:
		ws := strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		if len(ws) == 0 {
			return nil
		}
		v = ws
	case idList:
		var ids []int64
		for _, f := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return &formError{name, fmt.Sprintf("want job ids separated by commas, got %q", f)}
			}
			ids = append(ids, n)
		}
		if len(ids) == 0 {
			return nil
		}
		v = ids
	case jsonText:
		if strings.TrimSpace(raw) == "" {
			return nil
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return &formError{name, fmt.Sprintf("want a JSON object: %v", err)}
		}
		v = m
	}
	parts := strings.Split(fd.path, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := obj[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			obj[p] = sub
		}
		obj = sub
	}
	obj[parts[len(parts)-1]] = v
	return nil
}

// jobJSON is the API's job object from the form.
func jobJSON(form url.Values) (map[string]any, error) {
	out := map[string]any{}
	for _, fd := range jobFields {
		if err := put(out, form, fd.path, fd); err != nil {
			return nil, err
		}
	}
	if _, ok := out["alarm_targets"]; !ok {
		out["alarm_targets"] = []string{}
	}
	return out, nil
}

// triggerJSON is the API's trigger object from the form's fields under prefix.
func triggerJSON(form url.Values, prefix string) (map[string]any, error) {
	kind := form.Get(prefix + "kind")
	if kind == "" {
		kind = "cron"
	}
	fields, ok := triggerKinds[kind]
	if !ok {
		return nil, &formError{prefix + "kind", fmt.Sprintf("unknown trigger kind %q", kind)}
	}
	out := map[string]any{}
	switch kind {
	case "once":
		out["once"] = true
	case "cron":
		out["cron"] = form.Get(prefix + "cron") // an empty expression is the API's to refuse
	case "calendar_interval", "daily_interval":
		out[kind] = map[string]any{}
	}
	for _, fd := range slices.Concat(fields, triggerCommon) {
		if err := put(out, form, prefix+fd.path, fd); err != nil {
			return nil, err
		}
	}
	// The editor's Zones input lists the zones besides the time zone: the API's zones list
	// them all, the time zone first.
	if also, ok := out["zones"].([]string); ok {
		tz, _ := out["time_zone"].(string)
		if tz == "" {
			tz = "UTC"
		}
		out["zones"] = append([]string{tz}, also...)
	}
	return out, nil
}

// flatten turns the API's JSON object into form values by field path.
func flatten(prefix string, obj map[string]any, into url.Values) {
	for k, v := range obj {
		switch v := v.(type) {
		case map[string]any:
			if prefix == "" && k == "data" {
				if len(v) > 0 {
					b, _ := json.MarshalIndent(v, "", "  ") // decoded JSON encodes again
					into.Set(k, string(b))
				}
				continue
			}
			flatten(prefix+k+".", v, into)
		case []any:
			if k == "zones" && len(v) > 0 {
				v = v[1:] // the first is the time zone; the input lists the others
			}
			ls := make([]string, len(v))
			sep := ", " // numbers (job ids) and zones share one input
			for i, x := range v {
				if _, num := x.(float64); !num && k != "zones" {
					sep = "\n"
				}
				ls[i] = fmt.Sprint(x)
			}
			into.Set(prefix+k, strings.Join(ls, sep))
		case nil:
		case float64:
			into.Set(prefix+k, strconv.FormatFloat(v, 'f', -1, 64))
		case bool:
			into.Set(prefix+k, strconv.FormatBool(v))
		default:
			into.Set(prefix+k, fmt.Sprint(v))
		}
	}
}

// triggerKindOf names the kind of a trigger's flattened values.
func triggerKindOf(vals url.Values, prefix string) string {
	switch {
	case vals.Get(prefix+"cron") != "":
		return "cron"
	case vals.Get(prefix+"once") == "true":
		return "once"
	case vals.Get(prefix+"every_ms") != "":
		return "simple"
	case vals.Get(prefix+"calendar_interval.unit") != "":
		return "calendar_interval"
	case vals.Get(prefix+"daily_interval.unit") != "":
		return "daily_interval"
	}
	return "cron"
}
