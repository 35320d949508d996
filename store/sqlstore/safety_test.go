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

// TestOpenRefusesWhatIsNoPath: a mistyped URL must not become a new SQLite file, and the
// refusal does not print the password it was given.
func TestOpenRefusesWhatIsNoPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{"postgress://u:S3cret@h/db", "host=h user=u password=S3cret dbname=d", "root:S3cret@tcp(h:3306)/db", "pg://x"} {
		st, err := Open(context.Background(), dsn)
		if err == nil {
			st.Close()
			t.Errorf("Open(%q) succeeded", dsn)
		} else if strings.Contains(err.Error(), "S3cret") {
			t.Errorf("Open(%q) prints the password: %v", dsn, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused DSNs left files: %v", ents)
	}
}
