package main

import (
	"bufio"
	"bytes"
	"context"
	"github.com/sundial-scheduler/sundial/internal/testdb"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerCommand builds the binary and runs `sundial server` as a real process: it
// answers /healthz, shuts down cleanly on SIGTERM, and prints the admin password on the
// first start only.
func TestServerCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	db := filepath.Join(dir, "sundial.db")
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "sundial version v") ||
		strings.Contains(string(out), "devel") {
		t.Errorf("sundial --version of a -buildvcs=false build: %q %v, want the checkout's version", out, err)
	}

	first := startServer(t, bin, dir, "--db", db)
	if !strings.Contains(first.banner, `Created the admin user "admin" with the password`) {
		t.Fatalf("first start printed no admin password:\n%s", first.banner)
	}
	resp, err := http.Get(first.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	resp, err = http.Get(first.url + "/api/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("/api/v1/jobs without a token: %d, want 401", resp.StatusCode)
	}
	first.stop(t)

	// The second start reads the database from SUNDIAL_DB and creates no new admin; the
	// database is migrated, so --no-migrate starts.
	second := startServer(t, bin, dir, "SUNDIAL_DB="+db, "--no-migrate")
	if strings.Contains(second.banner, "password") {
		t.Fatalf("second start printed a password again:\n%s", second.banner)
	}
	second.stop(t)
}

type serverProc struct {
	cmd    *exec.Cmd
	url    string
	banner string // stdout up to the listening line
	rest   chan string
	stderr bytes.Buffer // the logs, shown when the process misbehaves
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startServer runs the server on a free port; args that look like NAME=value are
// environment variables, the others flags.
func startServer(t *testing.T, bin, dir string, args ...string) *serverProc {
	t.Helper()
	cmd := exec.Command(bin, "server", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, a := range args {
		if strings.Contains(a, "=") && !strings.HasPrefix(a, "-") {
			cmd.Env = append(cmd.Env, a)
		} else {
			cmd.Args = append(cmd.Args, a)
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serverProc{cmd: cmd, rest: make(chan string, 1)}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // a no-op once it has exited
	lines := bufio.NewScanner(stdout)
	var banner strings.Builder
	found := make(chan string, 1)
	go func() {
		sent := false
		var rest strings.Builder
		for lines.Scan() {
			if sent {
				rest.WriteString(lines.Text() + "\n")
				continue
			}
			banner.WriteString(lines.Text() + "\n")
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
		p.rest <- rest.String()
	}()
	select {
	case u, ok := <-found:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("server exited before listening: %s", p.stderr.String())
		}
		p.url, p.banner = u, banner.String()
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start listening within 30 s")
	}
	return p
}

// stop sends SIGTERM and expects a clean exit with the goodbye line.
func (p *serverProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rest string
	select {
	case rest = <-p.rest:
	case <-ctx.Done():
		t.Fatal("server did not exit within 30 s of SIGTERM")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("server exit after SIGTERM: %v\n%s", err, p.stderr.String())
	}
	if !strings.Contains(rest, "Sundial stopped") {
		t.Fatalf("stdout after SIGTERM %q: want the stop line", rest)
	}
}

// buildBinary builds the sundial binary into dir, for tests that run it as a process.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "sundial")
	// -buildvcs=false as in many containers and CI: the binary still knows its version.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestServerSMTPNeedsFrom: a mail server without a sender address is a usage error, also
// when it comes from the environment, and nothing is opened.
func TestServerSMTPNeedsFrom(t *testing.T) {
	t.Setenv("SUNDIAL_SMTP_ADDR", "127.0.0.1:2525")
	db := filepath.Join(t.TempDir(), "never.db")
	code, _, errOut := runCLI(t, "", "server", "--db", db, "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, "--smtp-from") {
		t.Errorf("exit %d, stderr %q: want 2 naming --smtp-from", code, errOut)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the database was created (%v)", err)
	}
}

// TestServerPoolSize: --db-max-conns sizes the node's pool on PostgreSQL and MySQL (the
// banner says the pool's real bound), and a pool of no connection is refused.
func TestServerPoolSize(t *testing.T) {
	if code, _, errOut := runCLI(t, "", "server", "--db", filepath.Join(t.TempDir(), "never.db"), "--db-max-conns", "0"); code != 2 || !strings.Contains(errOut, "--db-max-conns 0") {
		t.Errorf("--db-max-conns 0: exit %d, %s", code, errOut)
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	for _, dialect := range []string{"postgres", "mysql"} {
		p := startServer(t, bin, dir, "--db="+testdb.DSN(t, dialect), "--db-max-conns=5")
		if !strings.Contains(p.banner, ", at most 5 connections)") {
			t.Errorf("%s: the banner does not say the pool of 5:\n%s", dialect, p.banner)
		}
	}
}
