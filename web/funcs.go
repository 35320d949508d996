package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

var funcs = template.FuncMap{
	"ms":      fmtMillis,
	"msShort": fmtMillisShort,
	"msIn":    fmtMillisIn,
	"tm":      func(t api.Time) template.HTML { return fmtMillis(int64(t)) },
	"dur":     fmtDuration,
	// goDur writes milliseconds as a Go duration (2h0m0s) for an input the API reads back;
	// "" for 0.
	"goDur": func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return (time.Duration(ms) * time.Millisecond).String()
	},
	"ago":      func(now, at int64) string { return fmtDuration(now - at) },
	"since":    func(now, t api.Time) string { return fmtDuration(int64(now - t)) },
	"join":     strings.Join,
	"shown":    secret.Shown,
	"jsonLine": func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) },
	"long":     longText,
	"pathEsc":  url.PathEscape,
	"head":     textHead,
	"size":     textSize,
	"stateCls": stateClass,
	"add":      func(a, b int) int { return a + b },
	"sub":      func(a, b int64) int64 { return a - b },
	"asset":    asset,
	"fid":      fieldID,
	"dict":     dict,
	"list":     func(xs ...string) []string { return xs },
	// query joins a path and an encoded query string. A query written after a literal "?"
	// in a template would be escaped as one value ("a=1&b=2" as "a%3d1%26b%3d2").
	"query": func(path, q string) string {
		if q == "" {
			return path
		}
		return path + "?" + q
	},
	"firstPage": func(q string) string {
		v, _ := url.ParseQuery(q)
		v.Del("after")
		return v.Encode()
	},
	"schedText":    scheduleText,
	"runsLeft":     func(t *store.Trigger) int64 { return max(t.RunLimit-t.TimesFired, 0) },
	"previewCount": func() int { return previewCount },
	"appOpts": func(apps []string, current string) [][2]string {
		out := [][2]string{{"", "None (in-process)"}}
		for _, a := range apps {
			out = append(out, [2]string{a, a})
		}
		// Executors register their app without anyone creating it: keep the job's own.
		if current != "" && !contains(apps, current) {
			out = append(out, [2]string{current, current})
		}
		return out
	},
	"calOpts": func(cals []string) [][2]string {
		out := [][2]string{{"", "None"}}
		for _, c := range cals {
			out = append(out, [2]string{c, c})
		}
		return out
	},
	"routingOpts": func() [][2]string {
		out := [][2]string{{"", "Default (first)"}}
		for _, s := range dispatch.Strategies {
			out = append(out, [2]string{string(s), strings.ReplaceAll(string(s), "_", " ")})
		}
		return out
	},
	"concurrencyOpts": func() [][2]string {
		return [][2]string{{"allow", "Allow (side by side)"}, {"skip", "Skip (drop the new fire)"},
			{"buffer_one", "Buffer one (keep the newest)"}, {"buffer_all", "Buffer all (queue in order)"},
			{"cancel", "Cancel (stop the old, then run)"}, {"terminate", "Terminate (kill the old, run now)"},
			{"at_most", "At most N side by side"}}
	},
	"kindOpts": func() [][2]string {
		return [][2]string{{"cron", "Cron expression"}, {"simple", "Every N milliseconds"}, {"once", "Once"},
			{"calendar_interval", "Calendar interval (days, months…)"}, {"daily_interval", "Daily time window"}}
	},
	"unitOpts": func() [][2]string {
		return [][2]string{{"SECOND", "seconds"}, {"MINUTE", "minutes"}, {"HOUR", "hours"}, {"DAY", "days"},
			{"WEEK", "weeks"}, {"MONTH", "months"}, {"YEAR", "years"}}
	},
	"dailyUnitOpts": func() [][2]string {
		return [][2]string{{"SECOND", "seconds"}, {"MINUTE", "minutes"}, {"HOUR", "hours"}}
	},
	"dstOpts": func() [][2]string {
		return [][2]string{{"quartz", "Quartz-exact (default)"}, {"once", "Once: a repeated time once, a skipped one after the gap"},
			{"once_skip_gap", "Once, skipping times in a gap"}}
	},
	"catchUpOpts": func() [][2]string {
		return [][2]string{{"", "Misfire policy (default)"}, {"coalesce", "Coalesce: one run covering the gap"}}
	},
	"misfireOpts": func() [][2]string {
		return [][2]string{{"", "Smart (default)"}, {"ignore", "Ignore (fire all missed)"},
			{"fire_now", "Fire now"}, {"do_nothing", "Do nothing (wait)"},
			{"reschedule_now_existing", "Reschedule now, existing count"},
			{"reschedule_now_remaining", "Reschedule now, remaining count"},
			{"reschedule_next_remaining", "Reschedule next, remaining count"},
			{"reschedule_next_existing", "Reschedule next, existing count"}}
	},
}

// dict builds a template's argument from key-value pairs.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// fieldID makes an element id of a field path: triggers[0].cron is triggers-0-cron.
func fieldID(path string) string {
	return strings.Trim(strings.NewReplacer("[", "-", "]", "", ".", "-").Replace(path), "-")
}

var (
	assetOnce sync.Once
	assetVer  map[string]string
)

// asset is a static file's URL with its content hash, so a new build is never served from a
// stale cache.
func asset(name string) string {
	assetOnce.Do(func() {
		assetVer = map[string]string{}
		_ = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := staticFS.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			assetVer[strings.TrimPrefix(p, "static/")] = hex.EncodeToString(h[:6])
			return nil
		})
	})
	return "/static/" + name + "?v=" + assetVer[name]
}

// scheduleText shows a stored trigger's schedule in a line.
func scheduleText(t *store.Trigger) string {
	loc, err := schedule.LoadZone(t.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	s, err := schedule.DecodeSpec(schedule.Kind(t.Kind), t.Spec, loc)
	if err != nil {
		return string(t.Kind) + " (unreadable)"
	}
	zone := " (" + t.TimeZone + ")"
	switch s := s.(type) {
	case *schedule.Cron:
		return s.String() + zone
	case schedule.Simple:
		if s.Interval == 0 && s.RepeatCount == 0 {
			return "once"
		}
		txt := "every " + s.Interval.String()
		if s.RepeatCount >= 0 {
			txt += fmt.Sprintf(", %d more times", s.RepeatCount)
		}
		return txt
	case schedule.CalendarInterval:
		return fmt.Sprintf("every %d %s%s", s.Interval, units(s.Interval, s.Unit), zone)
	case schedule.DailyInterval:
		return fmt.Sprintf("%s–%s every %d %s%s", s.StartTimeOfDay, s.EndTimeOfDay, s.Interval, units(s.Interval, s.Unit), zone)
	}
	return string(t.Kind)
}

func units(n int, u schedule.IntervalUnit) string {
	name := strings.ToLower(u.String())
	if n != 1 {
		name += "s"
	}
	return name
}

// A text longer than foldChars or foldLines lines is folded on the pages (a job's parameters
// may be tens of KB): its start is shown, the whole on demand.
const (
	foldChars = 400
	foldLines = 8
	headChars = 80
)

func longText(s string) bool { return len(s) > foldChars || strings.Count(s, "\n") >= foldLines }

// textHead is the start of a folded text: its first line, cut at headChars characters.
func textHead(s string) string {
	line, _, more := strings.Cut(s, "\n")
	if r := []rune(line); len(r) > headChars {
		return string(r[:headChars]) + "…"
	} else if more {
		return line + " …"
	}
	return line
}

// textSize is a text's size for people: "812 B", "60 KB".
func textSize(s string) string {
	if n := len(s); n < 1024 {
		return fmt.Sprintf("%d B", n)
	} else if n < 1024*1024 {
		return fmt.Sprintf("%d KB", (n+512)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(len(s))/(1024*1024))
}
