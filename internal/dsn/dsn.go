// Package dsn reads the database connection strings Sundial accepts, for its own store and for
// the databases an import reads, and hides their passwords for printing. Every command that
// takes a DSN goes through Parse and Redact, so no form is redacted by one and echoed by another.
package dsn

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Kind is the database a DSN names.
type Kind int

const (
	SQLite Kind = iota
	Postgres
	MySQL
)

// DSN is a parsed connection string: exactly one of its configurations is set, by Kind.
type DSN struct {
	Kind Kind
	// Postgres is pgx's configuration of a postgres:// or postgresql:// URL.
	Postgres *pgx.ConnConfig
	// MySQL is go-sql-driver's configuration of a mysql:// DSN.
	MySQL *mysql.Config
	// SQLite is the path of a sqlite:// or file: DSN or of a bare path, with its ?query.
	SQLite string
}

// forms is how each Kind is written, for the message that refuses a DSN.
var forms = map[Kind]string{
	Postgres: "postgres://user:pass@host:5432/db",
	MySQL:    "mysql://user:pass@tcp(host:3306)/db",
	SQLite:   "sqlite://path, file:path or a file path",
}

// Parse reads dsn in one of the forms of the kinds in accept (all kinds if none):
//
//	postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@tcp(host:3306)/db                  (go-sql-driver's DSN after the scheme)
//	mysql://user:pass@host:3306/db                       (the same as a URL writes it)
//	sqlite://path/to/file.db, file:path.db or a bare path
//
// It refuses what was meant as a database but is none of these (an unknown scheme, a libpq
// keyword string, a go-sql-driver DSN without mysql://): taken as a SQLite path it would
// silently become a new, empty database file. Its errors never hold the DSN's passwords.
func Parse(dsn string, accept ...Kind) (DSN, error) {
	if len(accept) == 0 {
		accept = []Kind{Postgres, MySQL, SQLite}
	}
	var want []string
	for _, k := range accept {
		want = append(want, forms[k])
	}
	kind := SQLite
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		kind = Postgres
	case strings.HasPrefix(dsn, "mysql://"):
		kind = MySQL
	case strings.HasPrefix(dsn, "sqlite://"), strings.HasPrefix(dsn, "file:"):
	case strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return DSN{}, fmt.Errorf("unknown database scheme %q: want %s", Redact(scheme)+"://", strings.Join(want, " or "))
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix("):
		return DSN{}, errors.New("a MySQL DSN needs the mysql:// prefix")
	case strings.Contains(dsn, "=") && strings.Contains(dsn, " "):
		return DSN{}, fmt.Errorf("a keyword=value connection string is not supported: want %s", strings.Join(want, " or "))
	}
	if !slices.Contains(accept, kind) {
		return DSN{}, fmt.Errorf("want %s", strings.Join(want, " or "))
	}
	switch kind {
	case Postgres:
		pc, err := pgx.ParseConfig(dsn)
		if err != nil {
			return DSN{}, scrub(err, dsn)
		}
		return DSN{Kind: Postgres, Postgres: pc}, nil
	case MySQL:
		rest := strings.TrimPrefix(dsn, "mysql://")
		if !strings.Contains(rest, "(") {
			// user:pass@host:3306/db, as a URL writes it: the driver wants tcp(host:3306).
			at := strings.LastIndex(rest, "@")
			slash := strings.Index(rest[at+1:], "/")
			if slash < 0 {
				return DSN{}, errors.New("no database name")
			}
			rest = rest[:at+1] + "tcp(" + rest[at+1:at+1+slash] + ")" + rest[at+1+slash:]
		}
		mc, err := mysql.ParseDSN(rest)
		if err != nil {
			return DSN{}, scrub(err, dsn)
		}
		if mc.DBName == "" {
			return DSN{}, errors.New("no database name")
		}
		return DSN{Kind: MySQL, MySQL: mc}, nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "file:")
	if path == "" || path[0] == '?' {
		return DSN{}, errors.New("empty SQLite path")
	}
	return DSN{Kind: SQLite, SQLite: path}, nil
}

// secretKeys are the parameters of a DSN (URL query or libpq keyword) that carry a password.
const secretKeys = `password|sslpassword|pass|passwd|pwd`

var (
	// secretQuery is a password in a URL's query: its value ends at the next parameter.
	secretQuery = regexp.MustCompile(`(?i)([?&](?:` + secretKeys + `)=)([^&#]*)`)
	// secretKeyword is a password in a libpq keyword string: quoted, or up to a space.
	secretKeyword = regexp.MustCompile(`(?i)((?:^|\s)(?:` + secretKeys + `)\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
)

// secrets returns the spans of dsn that hold a password, in any of Parse's forms and in the
// forms Parse refuses (so that its refusal can print them): the password of the user info
// (URL or go-sql-driver), password query parameters and libpq password keywords.
func secrets(dsn string) [][2]int {
	var spans [][2]int
	for _, re := range []*regexp.Regexp{secretQuery, secretKeyword} {
		for _, m := range re.FindAllStringSubmatchIndex(dsn, -1) {
			spans = append(spans, [2]int{m[4], m[5]})
		}
	}
	// user:pass@host: as go-sql-driver reads it, the user info ends at the last @ before the
	// last /, so a password may hold @, ? or /; a URL's query (after that /) may hold @ too.
	start := 0
	if i := strings.Index(dsn, "://"); i >= 0 {
		start = i + len("://")
	}
	head := dsn[start:]
	if slash := strings.LastIndexByte(head, '/'); slash >= 0 && strings.Contains(head[:slash], "@") {
		head = head[:slash]
	}
	if at := strings.LastIndexByte(head, '@'); at >= 0 {
		if c := strings.IndexByte(head[:at], ':'); c >= 0 {
			spans = append(spans, [2]int{start + c + 1, start + at})
		}
	}
	return spans
}

// Redact returns dsn with every password replaced by xxxxx, for messages and logs.
func Redact(dsn string) string {
	spans := secrets(dsn)
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var b strings.Builder
	done := 0 // dsn[:done] is written
	for _, s := range spans {
		if s[1] <= done || s[0] == s[1] {
			continue
		}
		b.WriteString(dsn[done:max(s[0], done)])
		if s[0] >= done {
			b.WriteString("xxxxx")
		}
		done = s[1]
	}
	b.WriteString(dsn[done:])
	return b.String()
}

// scrub returns err with every password of dsn, as written and unescaped, hidden from its
// text: a driver's parse error may quote the string it could not parse.
func scrub(err error, dsn string) error {
	msg := err.Error()
	for _, s := range secrets(dsn) {
		v := dsn[s[0]:s[1]]
		if v == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, v, "xxxxx")
		if u, uerr := url.QueryUnescape(v); uerr == nil && u != "" {
			msg = strings.ReplaceAll(msg, u, "xxxxx")
		}
	}
	return &scrubbed{msg: msg, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }

// Unwrap keeps errors.Is and errors.As working; the wrapped error's own text is not shown.
func (e *scrubbed) Unwrap() error { return e.err }
