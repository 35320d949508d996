package dsn

import (
	"strings"
	"testing"
)

// TestRedact covers every form Parse takes and the ones it refuses: none may keep its secret.
func TestRedact(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"postgres://u:S3cret@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgresql://u:S3cret@h/db", "postgresql://u:xxxxx@h/db"},
		{"postgres://u@h/db?password=S3cret&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"postgres://u@h/db?sslmode=disable&sslpassword=S3cret", "postgres://u@h/db?sslmode=disable&sslpassword=xxxxx"},
		{"postgres://u:S3cret@h/db?PASSWORD=S3cret2", "postgres://u:xxxxx@h/db?PASSWORD=xxxxx"},
		{"postgres://u@h/db?application_name=a:b", "postgres://u@h/db?application_name=a:b"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://u:S3cret@h/db?application_name=a@b", "postgres://u:xxxxx@h/db?application_name=a@b"},
		{"host=h password=S3cret dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password = 'S3 cret' dbname=d", "host=h password = xxxxx dbname=d"},
		{"password=S3cret host=h sslpassword=S3cret2", "password=xxxxx host=h sslpassword=xxxxx"},
		{"mysql://u:S3cret@tcp(h:3306)/db?parseTime=true", "mysql://u:xxxxx@tcp(h:3306)/db?parseTime=true"},
		{"mysql://u:S3c@r?t@tcp(h:3306)/db", "mysql://u:xxxxx@tcp(h:3306)/db"},
		{"mysql://u:S3cret@h:3306/db", "mysql://u:xxxxx@h:3306/db"},
		{"mysql://u@tcp(h:3306)/db", "mysql://u@tcp(h:3306)/db"},
		{"u:S3cret@tcp(h:3306)/db", "u:xxxxx@tcp(h:3306)/db"},
		{"u:S3cret@/db", "u:xxxxx@/db"},
		{"/var/lib/sundial/db.sqlite", "/var/lib/sundial/db.sqlite"},
		{"sqlite:///var/lib/sundial.db", "sqlite:///var/lib/sundial.db"},
		{"file:sundial.db?_pragma=busy_timeout(5000)", "file:sundial.db?_pragma=busy_timeout(5000)"},
		{"postgress://u:S3cret@h/db", "postgress://u:xxxxx@h/db"},
	} {
		if got := Redact(c.dsn); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
}

// TestParse checks each form's kind and that a refusal never quotes the password.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		kind Kind
		err  string // a part of the error; "" for none
	}{
		{dsn: "postgres://u:S3cret@h:5432/db?sslmode=disable", kind: Postgres},
		{dsn: "postgresql://u@h/db?password=S3cret", kind: Postgres},
		{dsn: "postgres://u@h/db?password=S3cret&sslmode=bogus", err: "sslmode"},
		{dsn: "postgres://u:S3cret@h:notaport/db", err: "cannot parse"},
		{dsn: "mysql://u:S3cret@tcp(h:3306)/db", kind: MySQL},
		{dsn: "mysql://u:S3cret@h:3306/db", kind: MySQL},
		{dsn: "mysql://u:S3cret@h:3306", err: "no database name"},
		{dsn: "mysql://u:S3cret@tcp(h:3306/db", err: "invalid DSN"},
		{dsn: "u:S3cret@tcp(h:3306)/db", err: "mysql:// prefix"},
		{dsn: "host=h password=S3cret dbname=d", err: "keyword=value"},
		{dsn: "postgress://u:S3cret@h/db", err: "unknown database scheme"},
		{dsn: "/var/lib/sundial.db", kind: SQLite},
		{dsn: "sqlite://x.db", kind: SQLite},
		{dsn: "file:x.db?_pragma=busy_timeout(5000)", kind: SQLite},
		{dsn: "sqlite://", err: "empty SQLite path"},
	} {
		d, err := Parse(c.dsn)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", c.dsn, err)
		case c.err == "" && d.Kind != c.kind:
			t.Errorf("Parse(%q) is kind %d, want %d", c.dsn, d.Kind, c.kind)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.dsn, err, c.err)
		case err != nil && strings.Contains(err.Error(), "S3cret"):
			t.Errorf("Parse(%q) error shows the password: %v", c.dsn, err)
		}
	}
	if _, err := Parse("postgres://u:S3cret@h/db", MySQL); err == nil || !strings.Contains(err.Error(), "want mysql://") || strings.Contains(err.Error(), "S3cret") {
		t.Errorf("a postgres URL where only MySQL is taken: %v", err)
	}
	if _, err := Parse("x.db", Postgres, MySQL); err == nil || !strings.Contains(err.Error(), "want postgres://user:pass@host:5432/db or mysql://") {
		t.Errorf("a path where only servers are taken: %v", err)
	}
	d, err := Parse("mysql://u:S3cret@h:3306/db")
	if err != nil || d.MySQL.Addr != "h:3306" || d.MySQL.Passwd != "S3cret" || d.MySQL.DBName != "db" {
		t.Errorf("the URL form of a MySQL DSN: %+v, %v", d.MySQL, err)
	}
}
