package quartz

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Properties.store's format, as Quartz writes job data with useProperties=true: comments,
// escaped separators and spaces in keys, \uXXXX (a surrogate pair too), continuation lines.
func TestParseProperties(t *testing.T) {
	in := "#\n#Wed Nov 25 13:57:04 CET 2026\nregion=eu-west\nkey\\ with\\=sep=v\\:1\n" +
		"accent=caf\\u00E9 \\uD83D\\uDE00\nmulti=one\\\n    two\n! bang comment\nspaced  :  x\nempty=\ntab=a\\tb\n"
	got, err := parseProperties([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"region": "eu-west", "key with=sep": "v:1", "accent": "café 😀", "multi": "onetwo",
		"spaced": "x", "empty": "", "tab": "a\tb"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if _, err := parseProperties([]byte("bad=\\u12")); err == nil {
		t.Error("a truncated \\u escape parsed")
	}
}

// blobs returns the calendar and job data blobs of the generated PostgreSQL dump.
func blobs(t testing.TB) [][]byte {
	b, err := os.ReadFile("quartztest/testdata/postgres/data.sql")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, m := range regexp.MustCompile(`decode\('([0-9a-f]*)', 'hex'\)`).FindAllStringSubmatch(string(b), -1) {
		raw, _ := hex.DecodeString(m[1])
		out = append(out, raw)
	}
	return out
}

func FuzzDecode(f *testing.F) {
	for _, b := range blobs(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := decodeCalendar(b); err == nil {
			for _, m := range c.members {
				_ = m.spec(time.UTC)
			}
		}
		_, _ = decodeJobData(b)
	})
}

func TestOpenForms(t *testing.T) {
	for _, dsn := range []string{"mysql://q:pw@tcp(db:3306)/quartz", "mysql://q:pw@db:3306/quartz", "postgres://q:pw@db/quartz"} {
		db, err := Open(dsn)
		if err != nil {
			t.Errorf("%s: %v", dsn, err)
			continue
		}
		db.Close()
	}
	for dsn, want := range map[string]string{
		"oracle://q:pw@db/quartz": `oracle://q:xxxxx@db/quartz: unknown database scheme "oracle://": want postgres://`,
		"mysql://q:pw@db:3306":    "no database name",
	} {
		if _, err := Open(dsn); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", dsn, err, want)
		}
	}
}
