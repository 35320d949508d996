// Package quartztest gives tests a Quartz 2.3.2 job store as the real Quartz wrote it: the
// SQL in testdata was written by testdata/gen (Quartz itself scheduling a representative
// set into PostgreSQL and MariaDB), with Quartz's next fire times for every trigger, so tests
// need no JVM.
package quartztest

import (
	"bufio"
	"context"
	"database/sql"
	"embed"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/sundial-scheduler/sundial/internal/testdb"
)

//go:embed testdata/postgres testdata/mysql
var files embed.FS

// Dialects are the databases the store was generated on.
var Dialects = []string{"postgres", "mysql"}

// Zone is the Quartz JVM's default zone when the store was generated (gen.sh): the --zone
// an import of it needs.
const Zone = "Europe/Paris"

// Create makes a fresh database of dialect ("postgres" or "mysql") holding the Quartz store
// (schedulers MAIN and OTHER under the prefix QRTZ_, LEGACY under LEGACY_) and returns its DSN
// in the form `sundial import quartz --from` takes. It is dropped when t ends; without the
// dialect's server the test is skipped (see testdb).
func Create(t testing.TB, dialect string) string {
	t.Helper()
	dsn := testdb.DSN(t, dialect)
	var db *sql.DB
	var err error
	if dialect == "postgres" {
		db, err = sql.Open("pgx", dsn)
	} else {
		var cfg *mysql.Config
		if cfg, err = mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql://")); err == nil {
			db, err = sql.Open("mysql", cfg.FormatDSN())
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx) // one session: the statements run where the schema was made
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, f := range []string{"schema.sql", "data.sql"} {
		b, err := files.ReadFile("testdata/" + dialect + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range Statements(string(b)) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("quartztest: %s %s: %v\n%s", dialect, f, err, stmt)
			}
		}
	}
	return dsn
}

// Statements splits an SQL script into its statements: comment lines (--, #) are dropped
// and a statement ends with a ';' at the end of a line, as in Quartz's scripts and the dumps.
func Statements(script string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(script, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") || strings.HasPrefix(trimmed, "#") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")
			cur.Reset()
			if !strings.EqualFold(s, "commit") {
				out = append(out, s)
			}
		}
	}
	return out
}

// Answer is what Quartz said about one stored trigger.
type Answer struct {
	Sched, Group, Name string
	// State is Quartz's getTriggerState: NORMAL, PAUSED, ...
	State string
	// Next are the next fire times Quartz computes from the stored state (up to 12).
	Next []time.Time
}

// Answers returns Quartz's answers for the store of dialect, in the file's order.
func Answers(t testing.TB, dialect string) []Answer {
	t.Helper()
	b, err := files.ReadFile("testdata/" + dialect + "/quartz-next.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []Answer
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 4 {
			t.Fatalf("quartztest: bad answer line %q", sc.Text())
		}
		a := Answer{Sched: f[0], Group: f[1], Name: f[2], State: f[3]}
		for _, s := range f[4:] {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("quartztest: bad time %q in %q", s, sc.Text())
			}
			a.Next = append(a.Next, time.UnixMilli(ms))
		}
		out = append(out, a)
	}
	return out
}
