package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// sundial job run --params gives the run its own params, and sundial exec get shows them and,
// for a script job, the script version the run was given.
func TestCLIRunParamsAndScriptVersion(t *testing.T) {
	s := startAPIServer(t)
	mustJSON[api.Job](t, s, "job", "create", "report", "--handler", "noop", "--params", "--month=1")
	x := mustJSON[api.Execution](t, s, "job", "run", "report", "--params", "--month=2 --dry-run")
	if x.Params != "--month=2 --dry-run" {
		t.Fatalf("job run --params: execution params %q", x.Params)
	}
	if out := s.mustCLI(t, "exec", "get", strconv.FormatInt(x.ID, 10)); !regexp.MustCompile(`Params:\s+--month=2 --dry-run\n`).MatchString(out) {
		t.Fatalf("exec get shows no params:\n%s", out)
	}

	mustJSON[api.Job](t, s, "job", "create", "cleanup", "--handler", "shell", "--app", "ops", "--params", "echo hi")
	if code, _, errOut := s.cli(t, "job", "run", "cleanup", "--params", "rm -rf /"); code == 0 || !strings.Contains(errOut, "params: a shell job runs its saved script") {
		t.Fatalf("params for a script job: exit %d: %s", code, errOut)
	}
	run := mustJSON[api.Execution](t, s, "job", "run", "cleanup")
	id := strconv.FormatInt(run.ID, 10)
	// No executor of ops is online: the run is marked running (and stamped), then fails.
	eventually(t, "the script run to end", func() bool {
		return mustJSON[api.Execution](t, s, "exec", "get", id).State == "failed"
	})
	if out := s.mustCLI(t, "exec", "get", id); !regexp.MustCompile(`Script version:\s+v1\n`).MatchString(out) {
		t.Fatalf("exec get shows no script version:\n%s", out)
	}
}
