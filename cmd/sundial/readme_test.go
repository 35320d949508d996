package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readmeBlock is one fenced block of the README.
type readmeBlock struct {
	line      int    // of the opening fence
	lang      string // "sh", "go", "" …
	directive string // the readme-test comment just above the fence, if any
	text      string
}

// readmeBlocks splits the README into its fenced blocks. A block may be preceded, on the line
// right above its fence, by <!-- readme-test: … --> saying how the test treats it:
//
//	background                  start the one command in it and leave it running (a server, an
//	                            executor: "in a terminal of its own"); it is ready when it prints
//	                            "is listening". The same command started again stops the first.
//	skip, WHY                   not run, for the reason given (the test suites themselves).
//	output of the block above   the standard output the sh block before it must print.
//
// Every other sh block is run as it is.
func readmeBlocks(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var out []readmeBlock
	var cur *readmeBlock
	prev := ""
	for i, line := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{line: i + 1, lang: strings.TrimSpace(line[3:])}
			if d, ok := strings.CutPrefix(prev, "<!-- readme-test:"); ok {
				cur.directive = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(d), "-->"))
			}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		prev = line
	}
	if cur != nil {
		t.Fatalf("README.md:%d: the block is never closed", cur.line)
	}
	return out
}

// TestREADME runs every command sequence of the README, top to bottom, as a new user would:
// in a fresh directory (the repository's files linked into it), with `sundial` installed by the
// README's own `go install`, a fresh SQLite database, and one shell's variables carried from
// block to block. Two things differ from a user's terminal: the server and executor listen on
// free ports (the README's localhost:8080 and 127.0.0.1:9999 are rewritten to them), and
// ADMIN_PASSWORD is set from what the server printed, as the README tells the user to do.
func TestREADME(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's walkthrough needs %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := newReadmeRunner(t, root)
	var last readmeBlock
	var lastOut string
	ran := 0
	for _, b := range readmeBlocks(t, string(readme)) {
		switch {
		case b.directive == "output of the block above":
			if last.lang != "sh" {
				t.Fatalf("README.md:%d: an expected output with no sh block above it", b.line)
			}
			if lastOut != b.text {
				t.Errorf("README.md:%d printed\n%s\nthe README shows (line %d)\n%s", last.line, lastOut, b.line, b.text)
			}
		case b.lang != "sh":
		case strings.HasPrefix(b.directive, "skip"):
			if strings.TrimSpace(strings.TrimPrefix(b.directive, "skip")) == "" {
				t.Errorf("README.md:%d: a skipped block must say why", b.line)
			}
		case b.directive == "background":
			r.background(b)
			ran++
		case b.directive == "":
			lastOut = r.run(b)
			ran++
		default:
			t.Fatalf("README.md:%d: unknown readme-test directive %q", b.line, b.directive)
		}
		last = b
	}
	if ran < 10 {
		t.Errorf("ran %d blocks of the README: it has lost its walkthrough, or this test its way of finding it", ran)
	}
}

// readmeRunner runs README blocks in one directory with one shell environment.
type readmeRunner struct {
	t       *testing.T
	dir     string
	env     []string
	replace *strings.Replacer
	procs   []*readmeProc
}

func newReadmeRunner(t *testing.T, root string) *readmeRunner {
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" || strings.HasPrefix(e.Name(), "sundial.db") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bin")
	serverAddr, executorAddr := freeAddr(t), freeAddr(t)
	var env []string
	for _, kv := range os.Environ() {
		// The caller's Sundial settings are not a new user's.
		if !strings.HasPrefix(kv, "SUNDIAL_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOBIN=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOBIN="+bin,
		"SUNDIAL_ADDR="+serverAddr, "SUNDIAL_SERVER=http://"+serverAddr)
	r := &readmeRunner{t: t, dir: dir, env: env,
		replace: strings.NewReplacer("localhost:8080", serverAddr, "127.0.0.1:9999", executorAddr)}
	t.Cleanup(func() {
		for i := len(r.procs) - 1; i >= 0; i-- {
			r.procs[i].stop(t)
		}
	})
	return r
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// run runs a block in bash, failing on its first failing command, and keeps the variables it
// set for the blocks after it. It returns the block's standard output.
func (r *readmeRunner) run(b readmeBlock) string {
	r.t.Helper()
	state := filepath.Join(r.t.TempDir(), "env")
	// set -a exports every variable the block assigns, so env sees them.
	script := "set -euo pipefail -a\n" + r.replace.Replace(b.text) + "env -0 > \"$README_STATE\"\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = r.dir
	cmd.Env = append(r.env, "README_STATE="+state)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("README.md:%d: %v\n%s\nstdout:\n%s\nstderr:\n%s%s", b.line, err, b.text, stdout.String(), stderr.String(), r.logs())
	}
	raw, err := os.ReadFile(state)
	if err != nil {
		r.t.Fatal(err)
	}
	r.env = nil
	for _, kv := range strings.Split(string(raw), "\x00") {
		if kv != "" && !strings.HasPrefix(kv, "README_STATE=") {
			r.env = append(r.env, kv)
		}
	}
	return stdout.String()
}

// logs is what the background processes printed, for a failure's message.
func (r *readmeRunner) logs() string {
	var sb strings.Builder
	for _, p := range r.procs {
		fmt.Fprintf(&sb, "\n--- %s:\n%s", p.command, p.output())
	}
	return sb.String()
}

// readmeProc is a command of a background block.
type readmeProc struct {
	command string
	cmd     *exec.Cmd
	exited  chan struct{}

	mu  sync.Mutex
	out bytes.Buffer
}

func (p *readmeProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stop ends the process as Ctrl-C would, and waits for it.
func (p *readmeProc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("%s did not stop within 30 s of SIGTERM", p.command)
	}
}

// background starts a block's one command and returns once it prints that it is listening.
// A server's first start prints the admin password: it goes into ADMIN_PASSWORD.
func (r *readmeRunner) background(b readmeBlock) {
	r.t.Helper()
	var command string
	for _, line := range strings.Split(strings.TrimSpace(b.text), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			if command != "" {
				r.t.Fatalf("README.md:%d: a background block holds one command", b.line)
			}
			command = r.replace.Replace(line)
		}
	}
	name := strings.TrimSpace(strings.SplitN(command, "#", 2)[0])
	for i, p := range r.procs {
		if p.command == name { // started again: the first is stopped (Ctrl-C)
			p.stop(r.t)
			r.procs = append(r.procs[:i], r.procs[i+1:]...)
			break
		}
	}
	pr, pw := io.Pipe()
	p := &readmeProc{command: name, exited: make(chan struct{})}
	p.cmd = exec.Command("bash", "-c", "exec "+command)
	p.cmd.Dir, p.cmd.Env = r.dir, r.env
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		r.t.Fatalf("README.md:%d: %v", b.line, err)
	}
	r.procs = append(r.procs, p)
	go func() {
		_ = p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	ready := make(chan string, 1) // the admin password, if one was printed
	go func() {
		sc := bufio.NewScanner(pr)
		password, wantPassword, signalled := "", false, false
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line + "\n")
			p.mu.Unlock()
			switch {
			case strings.Contains(line, "with the password:"):
				wantPassword = true
			case wantPassword && strings.TrimSpace(line) != "":
				password, wantPassword = strings.TrimSpace(line), false
			case !signalled && strings.Contains(line, "is listening"):
				ready <- password
				signalled = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case password := <-ready:
		if password != "" {
			r.env = append(r.env, "ADMIN_PASSWORD="+password)
		}
	case <-p.exited:
		r.t.Fatalf("README.md:%d: %s exited before it was listening:\n%s", b.line, name, p.output())
	case <-time.After(2 * time.Minute):
		r.t.Fatalf("README.md:%d: %s did not say it is listening within 2 minutes:\n%s", b.line, name, p.output())
	}
}
