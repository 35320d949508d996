package web

import (
	"fmt"
	"strings"
	"testing"
)

// lineDiff keeps the common lines in place and marks the rest, whatever the trailing newline.
func TestLineDiff(t *testing.T) {
	show := func(ds []diffLine) string {
		var b strings.Builder
		for _, d := range ds {
			fmt.Fprintf(&b, "%s%s|", d.Op, d.Text)
		}
		return b.String()
	}
	for _, tc := range []struct{ a, b, want string }{
		{"", "", ""},
		{"a\nb\n", "a\nb", " a| b|"},
		{"a\nb\nc\n", "a\nx\nc\n", " a|-b|+x| c|"},
		{"", "echo\n", "+echo|"},
		{"set -e\nrm x\n", "set -e\n", " set -e|-rm x|"},
		{"a\nb\n", "b\na\n", "-a| b|+a|"},
	} {
		if got := show(lineDiff(tc.a, tc.b)); got != tc.want {
			t.Errorf("lineDiff(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	big := strings.Repeat("x\n", 3000)
	if got := lineDiff(big, big+"y\n"); len(got) != 6001 || got[0].Op != "-" {
		t.Errorf("a diff over the cell bound has %d lines, want all removed then all added", len(got))
	}
}
