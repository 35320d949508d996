package chaos

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// buildProc builds the suite's process binary (cmd/chaosproc) into dir.
func buildProc(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "chaosproc")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sundial-scheduler/sundial/internal/chaos/cmd/chaosproc")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: go build chaosproc: %w\n%s", err, out)
	}
	return bin, nil
}

// process is one node or executor slot; each start is a new life (a new Proc).
type process struct {
	label  string // node1, exec2
	nodeID string // current node id ("" for executors)
	addr   string // fixed across restarts
	args   func(p *process) []string
	logDir string
	// stream: an executor on the stream transport, which listens on nothing; it is up when
	// its log gains the line ExecutorUp (banners counts those of its earlier lives).
	stream  bool
	banners int

	cmd    *exec.Cmd
	exited chan struct{}
	life   *Proc
}

func (p *process) start(bin string) (*Proc, error) {
	log, err := os.OpenFile(filepath.Join(p.logDir, p.label+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if p.stream {
		p.banners = p.bannerCount()
	}
	cmd := exec.Command(bin, p.args(p)...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a signal to the suite (Ctrl-C) does not reach it first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(log, "=== %s start %s (node id %q)\n", time.Now().UTC().Format(time.RFC3339Nano), p.label, p.nodeID)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("chaos: start %s: %w", p.label, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); log.Close(); close(done) }(p.exited)
	p.life = &Proc{Name: fmt.Sprintf("%s:%s:%d", p.label, p.nodeID, cmd.Process.Pid), NodeID: p.nodeID}
	return p.life, nil
}

// waitUp waits until the process answers on its address (a node's /healthz, a push executor's
// port) or, for a stream executor, until it printed ExecutorUp.
func (p *process) waitUp(ctx context.Context, node bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		var err error
		if node {
			var resp *http.Response
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/healthz", nil)
			if resp, err = http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		} else if p.stream {
			if p.bannerCount() <= p.banners {
				err = fmt.Errorf("%s has not printed %q to %s.log", p.label, ExecutorUp, p.label)
			}
		} else {
			var c net.Conn
			if c, err = (&net.Dialer{}).DialContext(ctx, "tcp", p.addr); err == nil {
				c.Close()
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("chaos: %s exited during its start (see %s.log)", p.label, p.label)
		case <-ctx.Done():
			return fmt.Errorf("chaos: %s did not come up: %w", p.label, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// signal sends sig; SIGKILL also waits for the exit.
func (p *process) signal(sig syscall.Signal) error {
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.label)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to %s: %w", sig, p.label, err)
	}
	if sig == syscall.SIGKILL {
		<-p.exited
		p.cmd = nil
	}
	return nil
}

// waitStopped waits until every thread of the process is stopped (state T in
// /proc/PID/task/*/stat), up to 5 s: after it returns nil the process begins nothing more.
func (p *process) waitStopped() error {
	if p.cmd == nil {
		return fmt.Errorf("%s is not running", p.label)
	}
	dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("%s: threads: %w", p.label, err)
		}
		stopped := true
		for _, t := range tasks {
			b, err := os.ReadFile(dir + "/" + t.Name() + "/stat")
			if err != nil {
				continue // a thread that exited
			}
			// The state follows the command's closing parenthesis: "PID (comm) S ...".
			if i := bytes.LastIndexByte(b, ')'); i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
	}
	return fmt.Errorf("%s: not every thread stopped within 5 s", p.label)
}

// stop ends the process with SIGTERM (SIGKILL after grace).
func (p *process) stop(grace time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		p.cmd = nil
	case <-time.After(grace):
		_ = p.signal(syscall.SIGKILL)
	}
}

func loopbackAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// ExecutorUp is the line a chaos executor prints once it is registered: a stream executor
// listens on nothing, so that line is how the suite knows it is up.
const ExecutorUp = "chaos executor: registered"

// bannerCount is how many times the process's log holds ExecutorUp.
func (p *process) bannerCount() int {
	b, _ := os.ReadFile(filepath.Join(p.logDir, p.label+".log"))
	return bytes.Count(b, []byte(ExecutorUp))
}
