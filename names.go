package sundial

import (
	"strings"
	"unicode"

	"github.com/sundial-scheduler/sundial/schedule"
)

// CheckName is the one rule for the names of jobs, triggers, groups, apps, calendars and
// users, wherever they come from (the API, the console, the CLI, an import, a Go program):
// not empty nor blank (white space only: it prints as nothing, and its row cannot be linked
// or named on a command line), and printable as itself (CheckNameText). A bad name is a
// *FieldError naming field.
func CheckName(field, name string) error {
	if strings.TrimSpace(name) == "" {
		if name == "" {
			return schedule.Fieldf(field, "must not be empty")
		}
		return schedule.Fieldf(field, "must not be blank (%d white space characters)", len([]rune(name)))
	}
	return CheckNameText(field, name)
}

// CheckNameText refuses text that does not print as itself: a control character (an
// escape sequence can rewrite a terminal) or an invisible format character (Unicode category
// Cf: bidi controls such as U+202E reorder what follows, so "gnp.exe" can show as
// "exe.png"; zero-width ones such as U+200B or U+FEFF make two different names look the
// same). Every name-like field of a request is held to it, blank or not.
func CheckNameText(field, s string) error {
	if i := strings.IndexFunc(s, Unprintable); i >= 0 {
		r := []rune(s[i:])[0]
		what := "control"
		if unicode.Is(unicode.Cf, r) {
			what = "invisible format"
		}
		return schedule.Fieldf(field, "must not contain %s characters (found U+%04X at byte %d)", what, r, i)
	}
	return nil
}

// Unprintable reports a rune that CheckNameText refuses in names, and that whatever prints
// names stored before it (the CLI) shows escaped: a control or an invisible format character.
func Unprintable(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
