package sqlstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteFilesPrivate: the database and its WAL are readable by their owner only, even
// under a permissive umask.
func TestSQLiteFilesPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), m)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable":     "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=secret&sslmode=disable": "postgres://u@h/db?password=xxxxx&sslmode=disable",
		"mysql://root:secret@tcp(127.0.0.1:3306)/test":      "mysql://root:xxxxx@tcp(127.0.0.1:3306)/test",
		"postgresql://h/db?sslpassword=secret&user=u":       "postgresql://h/db?sslpassword=xxxxx&user=u",
		"sundial.db": "sundial.db",
	} {
		if got := Redact(dsn); got != want || strings.Contains(got, "secret") {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestOpenRefusesWhatIsNoPath: a mistyped URL must not become a new SQLite file.
func TestOpenRefusesWhatIsNoPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{"postgress://u@h/db", "host=h user=u dbname=d", "root@tcp(h:3306)/db", "pg://x"} {
		if st, err := Open(context.Background(), dsn); err == nil {
			st.Close()
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused DSNs left files: %v", ents)
	}
}
