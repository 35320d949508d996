package main

import (
	"strings"
	"testing"
)

// TestDSNPasswordNeverPrinted: every command that takes a database prints its refusal
// without the password, whatever form the DSN has.
func TestDSNPasswordNeverPrinted(t *testing.T) {
	t.Chdir(t.TempDir())
	dsns := []string{
		"host=127.0.0.1 user=u password=S3cret dbname=d",
		"host=127.0.0.1 password='S3cret x' dbname=d",
		"postgres://u@127.0.0.1:1/d?password=S3cret&sslmode=bogus",
		"postgres://u:S3cret@127.0.0.1:1/d?sslmode=disable&connect_timeout=1",
		"mysql://u:S3cret@tcp(127.0.0.1:1)/d?timeout=1s",
		"mysql://u:S3cret@127.0.0.1:1/d?timeout=1s",
		"u:S3cret@tcp(127.0.0.1:1)/d",
		"postgress://u:S3cret@h/d",
	}
	for _, d := range dsns {
		for _, args := range [][]string{
			{"migrate", "status", "--db", d},
			{"migrate", "up", "--db", d},
			{"server", "--db", d, "--addr", "127.0.0.1:0"},
			{"import", "quartz", "--from", d, "--db", "sundial.db"},
			{"import", "xxl-job", "--from", d, "--db", "sundial.db"},
		} {
			code, out, errOut := runCLI(t, "", args...)
			if code == 0 || strings.Contains(errOut, "flag") {
				t.Errorf("%q: exit %d, %s", args, code, errOut)
			}
			if strings.Contains(out+errOut, "S3cret") {
				t.Errorf("%q prints the password:\n%s%s", args, out, errOut)
			}
		}
	}
}
