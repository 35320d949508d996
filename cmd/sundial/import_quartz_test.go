package main

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/importer/quartz/quartztest"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/internal/teststore"
)

// TestImportQuartzCLI runs the README's "Coming from Quartz" commands on the store the real
// Quartz 2.3.2 wrote into PostgreSQL and into MariaDB: the dry run prints the plan, --apply
// creates it, a second --apply changes nothing. (importer/quartz's TestImportQuartz checks
// what is stored and the fire times against Quartz's.)
func TestImportQuartzCLI(t *testing.T) {
	for _, d := range quartztest.Dialects {
		t.Run(d, func(t *testing.T) {
			from := quartztest.Create(t, d)
			dsn := testdb.DSN(t, "sqlite")
			teststore.OpenDSN(t, dsn) // migrated, as a server leaves it
			args := []string{"import", "quartz", "--from", from, "--sched-name", "MAIN", "--zone", quartztest.Zone, "--db", dsn}
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 || !strings.Contains(out, "Summary: calendars: 12 create; jobs: 4 create; triggers: 21 create; not imported: 4") ||
				!strings.Contains(out, "Dry run: nothing was written.") {
				t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = runCLI(t, "", append(args, "--apply")...)
			if code != 0 || !strings.Contains(out, "\nApplied.\n") {
				t.Fatalf("--apply: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = runCLI(t, "", append(args, "--apply")...)
			if code != 0 || !strings.Contains(out, "Summary: calendars: 12 unchanged; jobs: 4 unchanged; triggers: 21 unchanged;") {
				t.Fatalf("second --apply: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// Bad input exits 2 with a line naming it; a store that needs --zone is refused before
// anything is written (exit 1).
func TestImportQuartzCLIInput(t *testing.T) {
	if code, _, errOut := runCLI(t, "", "import", "quartz", "--db", "x.db"); code != 2 || !strings.Contains(errOut, "--from is required") {
		t.Errorf("without --from: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "import", "quartz", "--from", "oracle://a@b/c"); code != 2 || !strings.Contains(errOut, "want postgres://") {
		t.Errorf("--from oracle: exit %d, %s", code, errOut)
	}
	from := quartztest.Create(t, "postgres")
	dsn := testdb.DSN(t, "sqlite")
	teststore.OpenDSN(t, dsn)
	code, _, errOut := runCLI(t, "", "import", "quartz", "--from", from, "--sched-name", "MAIN", "--db", dsn)
	if code != 1 || !strings.Contains(errOut, "give it with --zone") {
		t.Errorf("without --zone: exit %d, %s", code, errOut)
	}
}
