package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/store/sqlstore"
)

// apiServer is a real server on a free port over SQLite in a temp file, as `sundial server`
// runs it, with the admin's password and an API token made through the API.
type apiServer struct {
	url, password, token string
	st                   *sqlstore.Store // for a test to set up what no command makes
}

func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	return startAPIServerOn(t, filepath.Join(t.TempDir(), "sundial.db"))
}

// onEveryDatabase runs fn, in parallel, against a server of its own on SQLite, PostgreSQL
// and MariaDB.
func onEveryDatabase(t *testing.T, fn func(t *testing.T, s *apiServer)) {
	for _, dialect := range testdb.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fn(t, startAPIServerOn(t, testdb.DSN(t, dialect)))
		})
	}
}

// startAPIServerOn is startAPIServer on the database dsn (testdb.DSN for each dialect).
func startAPIServerOn(t *testing.T, dsn string) *apiServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pw, created, err := server.EnsureAdmin(ctx, st, "admin")
	if err != nil || !created {
		t.Fatalf("EnsureAdmin: created %v, %v", created, err)
	}
	// A short poll makes a one-shot trigger fire within milliseconds of its creation.
	srv, err := server.New(server.Config{Store: st, Logger: slog.New(slog.DiscardHandler), ExecutorToken: cliExecutorToken, SecretKey: "cli-test-secret-key-0123456789",
		ExecutorWait: 100 * time.Millisecond,
		Scheduler:    sundial.Config{Engine: engine.Config{PollInterval: 50 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		st.Close()
	})
	s := &apiServer{url: "http://" + ln.Addr().String(), password: pw, st: st}
	s.token = s.createToken(t)
	return s
}

// createToken logs in with the password and creates a token through the API's client.
func (s *apiServer) createToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c, err := api.NewClient(s.url, "", api.WithRequestTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(ctx, "admin", s.password); err != nil {
		t.Fatalf("log in: %v", err)
	}
	tok, err := c.CreateToken(ctx, api.TokenRequest{Name: "cli test"})
	if err != nil || tok.Token == "" {
		t.Fatalf("create token: %v %+v", err, tok)
	}
	return tok.Token
}

// cli runs the CLI against the server with its token.
func (s *apiServer) cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, "", append(args, "--server", s.url, "--token", s.token)...)
}

// mustCLI runs the CLI and fails the test unless it succeeds.
func (s *apiServer) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := s.cli(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// mustJSON runs the CLI with -o json and decodes its output.
func mustJSON[T any](t *testing.T, s *apiServer, args ...string) T {
	t.Helper()
	out := s.mustCLI(t, append(args, "-o", "json")...)
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: output is not the JSON expected: %v\n%s", args, err, out)
	}
	return v
}

// eventually polls cond until it holds or 20 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCLIJobLifecycle(t *testing.T) {
	s := startAPIServer(t)

	out := s.mustCLI(t, "job", "create", "hello", "--handler", "noop", "--once", "--retries", "2", "--timeout", "30s")
	if !strings.Contains(out, "hello") || !strings.Contains(out, "once") || !strings.Contains(out, "30s") {
		t.Fatalf("job create output lacks the job or its trigger:\n%s", out)
	}
	jobs := mustJSON[api.Page[api.Job]](t, s, "job", "list")
	if len(jobs.Items) != 1 || jobs.Items[0].Name != "hello" || jobs.Items[0].MaxRetries != 2 || jobs.Items[0].TimeoutMs != 30000 {
		t.Fatalf("job list -o json: %+v", jobs)
	}
	id := strconv.FormatInt(jobs.Items[0].ID, 10)
	table := s.mustCLI(t, "job", "list")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 2 || strings.Fields(lines[0])[0] != "ID" || strings.Fields(lines[1])[0] != id ||
		!strings.Contains(lines[1], "hello") || !strings.Contains(lines[1], "noop") {
		t.Fatalf("job list table:\n%s", table)
	}

	// The one-shot trigger fires at once; wait for its execution to succeed.
	var exec api.Execution
	eventually(t, "the one-shot execution to succeed", func() bool {
		xs := mustJSON[api.Page[api.Execution]](t, s, "exec", "list", "--job", id)
		if len(xs.Items) == 1 && xs.Items[0].State == "succeeded" {
			exec = xs.Items[0]
			return true
		}
		return false
	})
	execID := strconv.FormatInt(exec.ID, 10)
	if tbl := s.mustCLI(t, "exec", "list", "--job", id); !strings.Contains(tbl, "succeeded") || !strings.Contains(tbl, "STATE") {
		t.Errorf("exec list table:\n%s", tbl)
	}
	if got := mustJSON[api.Execution](t, s, "exec", "get", execID); got.ID != exec.ID || got.State != "succeeded" {
		t.Errorf("exec get: %+v", got)
	}
	// The noop handler logs one line, "noop ran".
	if logs := s.mustCLI(t, "exec", "logs", execID); !strings.Contains(logs, "noop ran") {
		t.Errorf("exec logs: %q, want the noop handler's line", logs)
	}
	code, logs, errOut := s.cli(t, "exec", "logs", "-f", execID)
	if code != 0 || !strings.Contains(logs, "noop ran") || !strings.Contains(errOut, "succeeded") {
		t.Errorf("exec logs -f: exit %d, stdout %q, stderr %q: want the line and the end state", code, logs, errOut)
	}

	// A trigger added later is listed, and pausing the job pauses it.
	trig := mustJSON[api.Trigger](t, s, "trigger", "add", "--job", id, "--cron", "0 0 12 * * ?", "--tz", "Europe/Berlin")
	if trig.Cron == nil || *trig.Cron != "0 0 12 * * ?" || trig.TimeZone != "Europe/Berlin" {
		t.Fatalf("trigger add: %+v", trig)
	}
	tid := strconv.FormatInt(trig.ID, 10)
	if out := s.mustCLI(t, "job", "pause", id); !strings.Contains(out, "Paused job "+id) {
		t.Errorf("job pause: %q", out)
	}
	if got := mustJSON[api.Trigger](t, s, "trigger", "get", tid); got.State != "paused" {
		t.Errorf("trigger state after job pause: %q, want paused", got.State)
	}
	s.mustCLI(t, "job", "resume", id)
	if got := mustJSON[api.Trigger](t, s, "trigger", "get", tid); got.State != "waiting" {
		t.Errorf("trigger state after job resume: %q, want waiting", got.State)
	}
	if out := s.mustCLI(t, "trigger", "list", "--job", id); !strings.Contains(out, "cron 0 0 12 * * ? (Europe/Berlin)") {
		t.Errorf("trigger list:\n%s", out)
	}

	// update changes only the flags given.
	upd := mustJSON[api.Job](t, s, "job", "update", id, "--retries", "5")
	if upd.MaxRetries != 5 || upd.TimeoutMs != 30000 || upd.Handler != "noop" {
		t.Errorf("job update --retries 5: %+v", upd)
	}

	if out := s.mustCLI(t, "job", "delete", id); !strings.Contains(out, "Deleted job "+id) {
		t.Errorf("job delete: %q", out)
	}
	code, _, errOut = s.cli(t, "job", "get", id)
	if code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("job get after delete: exit %d, stderr %q: want 1 and one line", code, errOut)
	}
}

func TestCLIErrors(t *testing.T) {
	s := startAPIServer(t)
	for _, tc := range []struct {
		name  string
		args  []string
		token string
		code  int
		want  string
	}{
		{"unknown flag", []string{"job", "list", "--bogus"}, s.token, 2, "--bogus"},
		{"two schedules", []string{"job", "create", "x", "--handler", "noop", "--once", "--cron", "0 0 * * * ?"}, s.token, 2, "exactly one schedule"},
		{"bad id", []string{"job", "get", "0"}, s.token, 2, `"0"`},
		// Anything else is a name, in the default group or GROUP/NAME.
		{"no such name", []string{"job", "get", "nightly/abc"}, s.token, 1, "job nightly/abc not found"},
		{"bad output", []string{"job", "list", "-o", "xml"}, s.token, 2, "--output"},
		// The server refuses the cron with a 400 naming the field.
		{"bad cron", []string{"job", "create", "x", "--handler", "noop", "--cron", "0 0 25 * * ?"}, s.token, 2, "triggers[0].cron"},
		{"no token", []string{"job", "list"}, "", 1, "not authenticated: set --token or SUNDIAL_TOKEN"},
		{"bad token", []string{"job", "list"}, "sdl_wrong", 1, "the server refused the API token (expired, revoked or unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SUNDIAL_TOKEN", "")
			code, out, errOut := runCLI(t, "", append(tc.args, "--server", s.url, "--token", tc.token)...)
			if code != tc.code || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "sundial: ") ||
				!strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and one line naming %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
	// Nothing was stored by the refused create.
	if jobs := mustJSON[api.Page[api.Job]](t, s, "job", "list"); len(jobs.Items) != 0 {
		t.Errorf("jobs after refused creates: %+v", jobs.Items)
	}
}

func TestCLIConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("SUNDIAL_SERVER", addr)
	code, _, errOut := runCLI(t, "", "node", "list", "--token", "x")
	if code != 1 || !strings.Contains(errOut, addr) || !strings.Contains(errOut, "connection refused") {
		t.Errorf("exit %d, stderr %q: want 1 naming %s", code, errOut, addr)
	}
}

func TestCLIPaginationAll(t *testing.T) {
	s := startAPIServer(t)
	const n = 7
	for i := range n {
		s.mustCLI(t, "job", "create", "job"+strconv.Itoa(i), "--handler", "noop")
	}
	first := mustJSON[api.Page[api.Job]](t, s, "job", "list", "--limit", "3")
	if len(first.Items) != 3 || first.Next == nil {
		t.Fatalf("--limit 3: %d items, next %v", len(first.Items), first.Next)
	}
	second := mustJSON[api.Page[api.Job]](t, s, "job", "list", "--limit", "3", "--after", *first.Next)
	if len(second.Items) != 3 || second.Items[0].ID <= first.Items[2].ID {
		t.Fatalf("--after %s: %+v", *first.Next, second.Items)
	}
	all := mustJSON[api.Page[api.Job]](t, s, "job", "list", "--limit", "3", "--all")
	seen := map[string]int{}
	for _, j := range all.Items {
		seen[j.Name]++
	}
	if len(all.Items) != n || len(seen) != n || all.Next != nil {
		t.Errorf("--all over pages of 3: %d items, %d distinct, next %v; want %d once each", len(all.Items), len(seen), all.Next, n)
	}
	table := s.mustCLI(t, "job", "list", "--limit", "3", "--all")
	if rows := strings.Count(strings.TrimSpace(table), "\n"); rows != n || strings.Contains(table, "more:") {
		t.Errorf("--all table has %d rows, want %d and no more-hint:\n%s", rows, n, table)
	}
	if page := s.mustCLI(t, "job", "list", "--limit", "3"); !strings.Contains(page, "--after "+*first.Next) {
		t.Errorf("a partial table does not say how to go on:\n%s", page)
	}
}

func TestCLICalendarNodeToken(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "calendar", "put", "weekends", "--spec", "weekly:1,7", "--description", "Sat and Sun")
	if cal := mustJSON[api.Calendar](t, s, "calendar", "get", "weekends"); cal.Spec != "weekly:1,7" {
		t.Errorf("calendar get: %+v", cal)
	}
	if out := s.mustCLI(t, "calendar", "list"); !strings.Contains(out, "weekends") || !strings.Contains(out, "Sat and Sun") {
		t.Errorf("calendar list:\n%s", out)
	}
	// A trigger can use the stored calendar; an unknown one is a 400 naming the field.
	s.mustCLI(t, "job", "create", "weekdays", "--handler", "noop", "--cron", "0 0 9 * * ?", "--calendar", "weekends")
	code, _, errOut := s.cli(t, "job", "create", "w2", "--handler", "noop", "--cron", "0 0 9 * * ?", "--calendar", "nope")
	if code != 2 || !strings.Contains(errOut, "triggers[0].calendar") {
		t.Errorf("unknown calendar: exit %d, %q", code, errOut)
	}
	code, _, errOut = s.cli(t, "calendar", "put", "bad", "--spec", "monthly:32")
	if code != 2 || !strings.Contains(errOut, "spec") {
		t.Errorf("bad calendar spec: exit %d, %q", code, errOut)
	}
	// --zone reaches the stored calendar; an unknown zone is a 400 naming the field.
	s.mustCLI(t, "calendar", "put", "ny-weekends", "--spec", "weekly:1,7", "--zone", "America/New_York")
	if cal := mustJSON[api.Calendar](t, s, "calendar", "get", "ny-weekends"); cal.Zone != "America/New_York" {
		t.Errorf("calendar get with --zone: %+v", cal)
	}
	code, _, errOut = s.cli(t, "calendar", "put", "bad", "--spec", "weekly:1,7", "--zone", "Mars/Olympus")
	if code != 2 || !strings.Contains(errOut, "zone") || !strings.Contains(errOut, "Mars/Olympus") {
		t.Errorf("bad calendar zone: exit %d, %q", code, errOut)
	}

	nodes := mustJSON[api.Page[api.Node]](t, s, "node", "list")
	if len(nodes.Items) != 1 || !nodes.Items[0].Self {
		t.Errorf("node list: %+v", nodes)
	}

	// --login makes the first token from the password; the new token then works.
	code, out, errOut := runCLI(t, s.password+"\n", "token", "create", "laptop", "--login", "admin", "--server", s.url, "-o", "json")
	var tok api.Token
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("token create --login: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "node", "list", "--server", s.url, "--token", tok.Token); code != 0 {
		t.Errorf("the new token does not work: %s", errOut)
	}
	code, _, errOut = runCLI(t, "wrong\n", "token", "create", "x", "--login", "admin", "--server", s.url)
	if code != 1 || !strings.Contains(errOut, "wrong user name or password") {
		t.Errorf("wrong password: exit %d, %q", code, errOut)
	}
	if out := s.mustCLI(t, "token", "list"); !strings.Contains(out, "laptop") || !strings.Contains(out, "cli test") {
		t.Errorf("token list:\n%s", out)
	}
	s.mustCLI(t, "token", "delete", strconv.FormatInt(tok.ID, 10))
	if code, _, errOut := runCLI(t, "", "node", "list", "--server", s.url, "--token", tok.Token); code != 1 ||
		!strings.Contains(errOut, "refused the API token (expired, revoked or unknown)") {
		t.Errorf("a deleted token still works: exit %d %q", code, errOut)
	}
	// A calendar a trigger uses cannot go; once its job is gone, it can.
	if code, _, errOut := s.cli(t, "calendar", "delete", "weekends"); code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("delete a calendar in use: exit %d, %q; want 1 and one line", code, errOut)
	}
	s.mustCLI(t, "job", "delete", "1")
	if out := s.mustCLI(t, "calendar", "delete", "weekends"); !strings.Contains(out, "Deleted calendar weekends") {
		t.Errorf("calendar delete: %q", out)
	}
	if code, _, _ := s.cli(t, "calendar", "get", "weekends"); code != 1 {
		t.Errorf("calendar get after delete: exit %d, want 1", code)
	}
}

// TestCLIScheduleFlags checks that every schedule form reaches the server as meant, by
// reading back the trigger it stored.
func TestCLIScheduleFlags(t *testing.T) {
	s := startAPIServer(t)
	job := mustJSON[api.Job](t, s, "job", "create", "forms", "--handler", "noop")
	id := strconv.FormatInt(job.ID, 10)
	for _, tc := range []struct {
		args []string
		want string // the trigger's schedule summary
	}{
		{[]string{"--cron", "0 30 2 * * ?", "--tz", "America/New_York"}, "cron 0 30 2 * * ? (America/New_York)"},
		{[]string{"--every", "90s", "--repeat", "2"}, "every 1m30s, 3 times"},
		{[]string{"--every", "1h"}, "every 1h0m0s"},
		{[]string{"--once", "--start", "2099-01-01T00:00:00Z"}, "once"},
		{[]string{"--calendar-interval", "2 week", "--preserve-hour", "--tz", "Europe/Berlin"}, "every 2 WEEK (Europe/Berlin)"},
		{[]string{"--daily", "09:00-17:00", "--every", "15m", "--days", "MON-FRI"},
			"09:00:00-17:00:00 every 15 MINUTE MON,TUE,WED,THU,FRI"},
	} {
		tr := mustJSON[api.Trigger](t, s, append([]string{"trigger", "add", "--job", id}, tc.args...)...)
		if got := scheduleSummary(tr); got != tc.want {
			t.Errorf("%v: stored schedule %q, want %q", tc.args, got, tc.want)
		}
	}
	code, _, errOut := s.cli(t, "trigger", "add", "--job", id, "--daily", "09:00-17:00", "--every", "1500ms")
	if code != 2 || !strings.Contains(errOut, "--every") {
		t.Errorf("daily window every 1.5 s: exit %d, %q; want 2 naming --every", code, errOut)
	}
}

// TestCLIAlarms: --alarm sets a job's alarm targets, update keeps them unless --alarm is
// given, an empty --alarm clears them, and a bad one is refused naming the field.
func TestCLIAlarms(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "watched", "--handler", "noop",
		"--alarm", "ops@example.com", "--alarm", "https://hooks.example.com/sundial")
	if strings.Join(j.AlarmTargets, " ") != "ops@example.com https://hooks.example.com/sundial" {
		t.Fatalf("job create --alarm: %+v", j.AlarmTargets)
	}
	id := strconv.FormatInt(j.ID, 10)
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "ops@example.com, https://hooks.example.com/sundial") {
		t.Errorf("job get shows no alarms:\n%s", out)
	}
	if got := mustJSON[api.Job](t, s, "job", "update", id, "--retries", "1"); len(got.AlarmTargets) != 2 {
		t.Errorf("update without --alarm dropped the targets: %v", got.AlarmTargets)
	}
	if got := mustJSON[api.Job](t, s, "job", "update", id, "--alarm", ""); len(got.AlarmTargets) != 0 {
		t.Errorf("update --alarm '': %v, want none", got.AlarmTargets)
	}
	code, _, errOut := s.cli(t, "job", "create", "bad", "--handler", "noop", "--alarm", "ops")
	if code != 2 || !strings.Contains(errOut, "alarm_targets[0]") || !strings.Contains(errOut, `"ops"`) {
		t.Errorf("job create --alarm ops: exit %d, stderr %q", code, errOut)
	}
}

// TestTermSafe: escape sequences, other control characters and invisible format characters
// (bidi controls, zero-width spaces) from the server are shown escaped, never sent to the
// terminal.
func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":         "plain name",
		"red\x1b[31mtext":    `red\x1b[31mtext`,
		"csi\u009b2J":        `csi\u009b2J`,
		"bell\a and \r back": `bell\x07 and \x0d back`,
		"bad \xff utf8":      `bad \xff utf8`,
		"kept \uFFFD and é":  "kept \uFFFD and é",
		"bidi \u202egnp.exe": `bidi \u202egnp.exe`,
		"zero\u200bwidth":    `zero\u200bwidth`,
		"bom\ufeff":          `bom\ufeff`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCLINames: a blank name or one with a bidi control is refused (exit 2, one line naming
// the field), and a name stored before that rule is printed with its invisible characters
// escaped, in lists, details and errors alike.
func TestCLINames(t *testing.T) {
	s := startAPIServer(t)
	for _, name := range []string{"   ", "gnp\u202eexe"} {
		code, _, errOut := s.cli(t, "job", "create", name, "--handler", "noop")
		if code != 2 || !strings.Contains(errOut, "name") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
			strings.ContainsRune(errOut, '\u202e') {
			t.Errorf("job create %q: exit %d, stderr %q: want 2, one line naming name, escaped", name, code, errOut)
		}
	}
	legacy := &store.Job{Group: "default", Name: "old\u202eexe.png", TargetKind: store.TargetLocal, Handler: "no\u200bop", Enabled: true}
	if err := s.st.JobInsert(context.Background(), legacy); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"job", "list"}, {"job", "get", itoa(legacy.ID)}} {
		out := s.mustCLI(t, args...)
		if strings.ContainsAny(out, "\u202e\u200b") || !strings.Contains(out, `old\u202eexe.png`) || !strings.Contains(out, `no\u200bop`) {
			t.Errorf("%v printed %q: want the invisible characters escaped", args, out)
		}
	}
}

// TestCLIAlarmChannels: --alarm takes a chat or paging target, shown masked; the alarm
// policy flags set the job's policy, job get says it in words, an update of another flag
// keeps both, an update of one policy flag keeps the others, and a bad policy is refused
// naming the field.
func TestCLIAlarmChannels(t *testing.T) {
	s := startAPIServer(t)
	j := mustJSON[api.Job](t, s, "job", "create", "paged", "--handler", "noop",
		"--alarm", "pagerduty:clikey0123456789", "--alarm-threshold", "3", "--alarm-window", "10m", "--alarm-recovery")
	if strings.Join(j.AlarmTargets, " ") != "pagerduty:***" ||
		j.AlarmPolicy != (api.AlarmPolicy{Threshold: 3, WindowMs: 600000, Recovery: true}) {
		t.Fatalf("job create: targets %v, policy %+v", j.AlarmTargets, j.AlarmPolicy)
	}
	id := strconv.FormatInt(j.ID, 10)
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "after 3 failures within 10m0s, recovery notice") ||
		strings.Contains(out, "clikey") {
		t.Errorf("job get:\n%s", out)
	}
	got := mustJSON[api.Job](t, s, "job", "update", id, "--retries", "1")
	if strings.Join(got.AlarmTargets, " ") != "pagerduty:***" || got.AlarmPolicy != j.AlarmPolicy {
		t.Errorf("update --retries changed the alarms: %v %+v", got.AlarmTargets, got.AlarmPolicy)
	}
	got = mustJSON[api.Job](t, s, "job", "update", id, "--alarm-silence", "30m")
	if got.AlarmPolicy != (api.AlarmPolicy{Threshold: 3, WindowMs: 600000, SilenceMs: 1800000, Recovery: true}) {
		t.Errorf("update --alarm-silence: %+v", got.AlarmPolicy)
	}
	code, _, errOut := s.cli(t, "job", "create", "bad", "--handler", "noop", "--alarm-window", "1m")
	if code != 2 || !strings.Contains(errOut, "alarm_policy.window_ms") {
		t.Errorf("--alarm-window without a threshold: exit %d, stderr %q", code, errOut)
	}
}

// TestCLIJobDispatchTimeout: a remote job's dispatch timeout is set by --dispatch-timeout on
// create and update (an update without the flag keeps it), shown, and refused on a job
// without an app, naming the flag's field.
func TestCLIJobDispatchTimeout(t *testing.T) {
	s := startAPIServer(t)
	s.mustCLI(t, "job", "create", "billing-run", "--handler", "report", "--app", "billing", "--dispatch-timeout", "2m")
	jobs := mustJSON[api.Page[api.Job]](t, s, "job", "list")
	if len(jobs.Items) != 1 || jobs.Items[0].DispatchTimeoutMs != 120000 {
		t.Fatalf("job list -o json: %+v", jobs)
	}
	id := strconv.FormatInt(jobs.Items[0].ID, 10)
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "Dispatch timeout") || !strings.Contains(out, "2m0s") {
		t.Fatalf("job get:\n%s", out)
	}
	s.mustCLI(t, "job", "update", id, "--retries", "1")
	if j := mustJSON[api.Job](t, s, "job", "get", id); j.DispatchTimeoutMs != 120000 || j.MaxRetries != 1 {
		t.Fatalf("after an update without the flag: %+v", j)
	}
	s.mustCLI(t, "job", "update", id, "--dispatch-timeout", "0s")
	if out := s.mustCLI(t, "job", "get", id); !strings.Contains(out, "--executor-wait") {
		t.Fatalf("job get of the server's default:\n%s", out)
	}
	code, _, errOut := s.cli(t, "job", "create", "local", "--handler", "noop", "--dispatch-timeout", "5s")
	if code == 0 || !strings.Contains(errOut, "dispatch_timeout_ms") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("a local job with a dispatch timeout: exit %d, %q; want a one-line error naming dispatch_timeout_ms", code, errOut)
	}
}
