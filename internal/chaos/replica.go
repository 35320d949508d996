package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// replicated is a database server with a standby that the suite can fail over to.
type replicated interface {
	DBServer
	// Addrs are the two servers' host:port, in a fixed order (their roles swap, not their
	// addresses).
	Addrs() []string
	// MultiDSN is the Sundial DSN naming both hostports, for a client that must find the
	// primary itself (target_session_attrs=read-write).
	MultiDSN(hostports []string) string
	// Failover kills the primary's every process with SIGKILL, promotes the standby, and
	// then makes a new standby of the old primary's host (pg_basebackup), synchronous again.
	// killed is when the primary was killed, promoted when the standby was writable.
	Failover(ctx context.Context) (killed, promoted time.Time, err error)
	// Shutdown stops both servers.
	Shutdown(ctx context.Context)
}

// pgPair is a PostgreSQL primary with a streaming-replication standby set up by pg_basebackup
// and synchronous commit: every commit the primary acknowledges is on the standby, so a
// failover loses none.
type pgPair struct {
	srv     [2]*postgresServer
	primary int
	inited  bool
}

func newPGPair(dir string) (*pgPair, error) {
	p := &pgPair{}
	for i := range p.srv {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p.srv[i] = &postgresServer{dir: filepath.Join(dir, string(rune('a'+i))), port: port, bin: postgresBin(),
			addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	}
	return p, nil
}

func (p *pgPair) Dialect() string { return "postgres" }

// Addr is the primary's.
func (p *pgPair) Addr() string               { return p.srv[p.primary].addr }
func (p *pgPair) DSN(hostport string) string { return p.srv[0].DSN(hostport) }
func (p *pgPair) Addrs() []string            { return []string{p.srv[0].addr, p.srv[1].addr} }
func (p *pgPair) MultiDSN(hostports []string) string {
	return p.srv[0].DSN(strings.Join(hostports, ",")) + "&target_session_attrs=read-write"
}

// Start starts the pair the first time; later (after Crash) it starts the primary again.
func (p *pgPair) Start(ctx context.Context) error {
	if p.inited {
		return p.srv[p.primary].Start(ctx)
	}
	a := p.srv[0]
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	if err := p.addStandby(ctx, 0, 1); err != nil {
		return err
	}
	p.inited = true
	return nil
}

// addStandby copies the primary's data to the standby's directory with pg_basebackup (-R
// writes standby.signal and the connection to the primary), starts it, and makes the
// primary wait for it on every commit.
func (p *pgPair) addStandby(ctx context.Context, primary, standby int) error {
	pr, sb := p.srv[primary], p.srv[standby]
	if err := os.RemoveAll(sb.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(sb.dir, 0o755); err != nil {
		return err
	}
	if err := chownTo(sb.dir, "postgres"); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(pr.addr)
	if err := runCmd(asUser(ctx, "postgres", filepath.Join(pr.bin, "pg_basebackup"), "-h", host, "-p", port, "-U", "postgres",
		"-D", sb.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync")); err != nil {
		return err
	}
	// Each server keeps its socket in its data directory, so the copy carries the socket
	// lock files of the servers that ran on the data before (pg_basebackup skips only the
	// sockets). One names a postmaster killed by a failover, a zombie where nothing reaps
	// it: the new server would take it for alive and refuse to start.
	locks, err := filepath.Glob(filepath.Join(sb.data(), ".s.PGSQL.*.lock"))
	if err != nil {
		return err
	}
	for _, l := range locks {
		if err := os.Remove(l); err != nil {
			return err
		}
	}
	// The copy carries the primary's synchronous_standby_names: the standby, once promoted,
	// waits for a standby of its own until the next addStandby.
	sb.inited = true
	if err := sb.Start(ctx); err != nil {
		return err
	}
	db, err := sql.Open("pgx", "postgres://postgres@"+pr.addr+"/postgres?sslmode=disable")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "ALTER SYSTEM SET synchronous_commit = 'on'",
		"SELECT pg_reload_conf()"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("chaos: %s: %w", q, err)
		}
	}
	// Synchronous from here: wait until the primary says so.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'").Scan(&n)
		if err == nil && n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the standby on %s did not become synchronous within a minute (%v)", sb.addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Crash crashes the primary (the standby stays, and waits for it).
func (p *pgPair) Crash(ctx context.Context) error { return p.srv[p.primary].Crash(ctx) }

func (p *pgPair) Failover(ctx context.Context) (killed, promoted time.Time, err error) {
	old, next := p.primary, 1-p.primary
	if err := killPostgres(p.srv[old]); err != nil {
		return time.Time{}, time.Time{}, err
	}
	killed = time.Now()
	sb := p.srv[next]
	if err := runCmd(asUser(ctx, "postgres", filepath.Join(sb.bin, "pg_ctl"), "-D", sb.data(), "-w", "-t", "60", "promote")); err != nil {
		return killed, time.Time{}, err
	}
	promoted = time.Now()
	p.primary = next
	// Until the old host is a standby again, the new primary commits alone: it would wait
	// for a standby it does not have.
	db, err := sql.Open("pgx", "postgres://postgres@"+sb.addr+"/postgres?sslmode=disable")
	if err != nil {
		return killed, promoted, err
	}
	defer db.Close()
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return killed, promoted, fmt.Errorf("chaos: %s: %w", q, err)
		}
	}
	return killed, promoted, p.addStandby(ctx, next, old)
}

// killPostgres kills a server's postmaster and every process it started with SIGKILL, as a
// lost machine would: no shutdown, no last WAL sent.
func killPostgres(s *postgresServer) error {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return fmt.Errorf("chaos: the primary's pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("chaos: the primary's pid: %w", err)
	}
	children := childrenOf(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("chaos: SIGKILL postmaster %d: %w", pid, err)
	}
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	// Gone when the port no longer answers and the processes are no more.
	deadline := time.Now().Add(10 * time.Second)
	for _, q := range append([]int{pid}, children...) {
		for alive(q) {
			if time.Now().After(deadline) {
				return fmt.Errorf("chaos: postgres process %d outlived SIGKILL by 10 s", q)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// Shutdown stops both servers at once (the suite's cleanup).
func (p *pgPair) Shutdown(ctx context.Context) {
	var errs []error
	for _, s := range p.srv {
		if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
			errs = append(errs, s.Crash(ctx))
		}
	}
	_ = errors.Join(errs...)
}
