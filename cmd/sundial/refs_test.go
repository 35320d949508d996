package main

import (
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLINamesThatLookLikeIDs: a job named "123" or "a/b", and a user named "40", are
// reachable: a command given the ambiguous form says what it tried and names the form that
// reaches the other; given that form, it works. On every database.
func TestCLINamesThatLookLikeIDs(t *testing.T) {
	onEveryDatabase(t, func(t *testing.T, s *apiServer) {
		num := mustJSON[api.Job](t, s, "job", "create", "123", "--group", "default", "--handler", "noop", "--cron", "0 0 2 * * ?")
		slash := mustJSON[api.Job](t, s, "job", "create", "a/b", "--group", "default", "--handler", "noop", "--cron", "0 0 2 * * ?")
		if slash.Group != "default" || slash.Name != "a/b" {
			t.Fatalf("created %s/%s, want default/a/b", slash.Group, slash.Name)
		}
		refused := func(want string, args ...string) {
			t.Helper()
			code, _, errOut := s.cli(t, args...)
			if code == 0 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%v: exit %d, %q; want one line saying %q", args, code, errOut, want)
			}
		}
		refused(`job 123: no job with id 123; a job is named "123": use default/123`, "job", "get", "123")
		refused(`job a/b: no job named so in group a; a job of group default is named "a/b": use default/a/b`, "job", "get", "a/b")
		refused(`job 999: no job with id 999, and none named "999"`, "job", "get", "999")
		for ref, want := range map[string]int64{"default/123": num.ID, "default/a/b": slash.ID, itoa(num.ID): num.ID} {
			if got := mustJSON[api.Job](t, s, "job", "get", ref); got.ID != want {
				t.Errorf("job get %s = job %d, want %d", ref, got.ID, want)
			}
		}

		c, err := api.NewClient(s.url, s.token)
		if err != nil {
			t.Fatal(err)
		}
		u, err := c.CreateUser(t.Context(), api.UserRequest{Name: "40", Password: "Orchid-Tunnel-Basalt-64", Role: "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		refused(`user 40: no user with id 40; a user is named "40": use name:40`, "user", "disable", "40")
		s.mustCLI(t, "user", "disable", "name:40")
		if got, err := c.GetUser(t.Context(), u.ID); err != nil || !got.Disabled {
			t.Errorf("user 40 after disable name:40: %+v %v", got, err)
		}
	})
}

// TestCLITriggerTakesTheJobAsArgument: `trigger add JOB` and `trigger list JOB` take the job
// as `job get` does; --job still works, and the job given twice, differently, is refused.
func TestCLITriggerTakesTheJobAsArgument(t *testing.T) {
	s := startAPIServer(t)
	job := mustJSON[api.Job](t, s, "job", "create", "nightly-export", "--handler", "noop", "--cron", "0 0 2 * * ?")
	added := mustJSON[api.Trigger](t, s, "trigger", "add", "nightly-export", "--cron", "0 0 3 * * ?")
	viaFlag := mustJSON[api.Trigger](t, s, "trigger", "add", "--job", "nightly-export", "--cron", "0 0 4 * * ?")
	if added.JobID != job.ID || viaFlag.JobID != job.ID {
		t.Errorf("triggers added to jobs %d and %d, want %d", added.JobID, viaFlag.JobID, job.ID)
	}
	for _, args := range [][]string{{"trigger", "list", "nightly-export"}, {"trigger", "list", "--job", "nightly-export"}} {
		if l := mustJSON[api.Page[api.Trigger]](t, s, args...); len(l.Items) != 3 {
			t.Errorf("%v: %d triggers, want 3", args, len(l.Items))
		}
	}
	code, _, errOut := s.cli(t, "trigger", "list", "nightly-export", "--job", "other")
	if code == 0 || !strings.Contains(errOut, "given twice") {
		t.Errorf("job given twice: exit %d, %q", code, errOut)
	}
}
