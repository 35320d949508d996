package main

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// TestCLINodeListSaysHealthAndWhoAnswered: node list shows each node's role and health in
// their own columns, and which node answered in a line of its own (its ANSWERED column read
// as health).
func TestCLINodeListSaysHealthAndWhoAnswered(t *testing.T) {
	s := startAPIServer(t)
	out := s.mustCLI(t, "node", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID NAME ROLE HEALTH LAST-SEEN STARTED" {
		t.Fatalf("node list:\n%s", out)
	}
	row := strings.Fields(lines[1])
	if len(row) < 4 || row[2] != "leader" && row[2] != "member" || row[3] != "live" {
		t.Errorf("node row %q: want a role and live", lines[1])
	}
	if lines[2] != "Answered by node "+row[0]+"." {
		t.Errorf("last line %q, want the node that answered", lines[2])
	}
}

// TestCLIDuplicateNameInOneClause: a name taken is said once, in one clause, for a job and
// a trigger alike — on every database (each maps its own unique violation).
func TestCLIDuplicateNameInOneClause(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		s.mustCLI(t, "job", "create", "tick", "--handler", "noop", "--cron", "0 0 2 * * ?")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"job", "create", "tick", "--handler", "noop"}, "sundial: job default/tick already exists\n"},
			{[]string{"trigger", "add", "tick", "--name", "tick#1", "--cron", "0 0 3 * * ?"}, "sundial: trigger default/tick#1 already exists\n"},
		} {
			if code, _, errOut := s.cli(t, tc.args...); code != 1 || errOut != tc.want {
				t.Errorf("%v: exit %d, %q; want 1 and %q", tc.args, code, errOut, tc.want)
			}
		}
	})
}

// TestServerBindsBeforeTheAdmin: `sundial server` on a busy port fails before it touches the
// database, so it shows no admin password for a server that never started, and the next
// start still creates (and shows) the admin — on every database.
func TestServerBindsBeforeTheAdmin(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests, which run once this function returns
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.DSN(t, dialect)
			code, out, errOut := runCLI(t, "", "server", "--db", dsn, "--addr", busy.Addr().String())
			if code == 0 || !strings.Contains(errOut, "listen on "+busy.Addr().String()) || strings.Contains(out, "password") {
				t.Fatalf("server on a busy port: exit %d, stdout %q, stderr %q; want a failure to listen and no password", code, out, errOut)
			}
			ctx := context.Background()
			st, err := sqlstore.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if _, created, err := server.EnsureAdmin(ctx, st, "admin"); err != nil || !created {
				t.Errorf("an admin existed after the failed start (created %v, %v): its password was shown for nothing", created, err)
			}
		})
	}
}
