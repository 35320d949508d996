package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DBServer is a database server of the suite's own, on its own port and data directory, that
// the suite may crash and start again. It never touches a shared server.
type DBServer interface {
	// Dialect is "postgres" or "mysql".
	Dialect() string
	// Addr is host:port of the server itself (the proxy forwards to it).
	Addr() string
	// DSN is the Sundial DSN of the suite's database through hostport (the proxy's address).
	DSN(hostport string) string
	// Start starts the server (initialising it on the first start) and waits until it answers.
	Start(ctx context.Context) error
	// Crash stops the server at once, as a power cut would (no clean shutdown).
	Crash(ctx context.Context) error
}

// NewDBServer returns a server of dialect ("postgres" or "mysql") under dir.
func NewDBServer(dialect, dir string) (DBServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	switch dialect {
	case "postgres":
		return &postgresServer{dir: dir, addr: addr, port: port, bin: postgresBin()}, nil
	case "mysql", "mariadb":
		return &mariadbServer{dir: dir, addr: addr, port: port}, nil
	}
	return nil, fmt.Errorf("chaos: dialect %q: want postgres or mysql", dialect)
}

// postgresBin is the directory of initdb and pg_ctl: SUNDIAL_CHAOS_PGBIN, else the newest
// installed under /usr/lib/postgresql.
func postgresBin() string {
	if d := os.Getenv("SUNDIAL_CHAOS_PGBIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestV := "/usr/lib/postgresql/15/bin", 0
	for _, d := range dirs {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil && v > bestV {
			best, bestV = d, v
		}
	}
	return best
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("chaos: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// asUser runs a command as the named user when this process is root (PostgreSQL refuses to
// run as root), and as itself otherwise.
func asUser(ctx context.Context, name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", name, "--"}, args...)...)
	}
	return exec.CommandContext(ctx, args[0], args[1:]...)
}

// chownTo gives path to the named user when this process is root.
func chownTo(path, name string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("chaos: user %s: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func runCmd(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: %s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// waitSQL waits until a query on db answers, up to a minute.
func waitSQL(ctx context.Context, driver, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: database did not answer within a minute: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type postgresServer struct {
	dir, addr, bin string
	port           int
	inited         bool
}

func (p *postgresServer) Dialect() string { return "postgres" }
func (p *postgresServer) Addr() string    { return p.addr }
func (p *postgresServer) DSN(hostport string) string {
	return "postgres://postgres@" + hostport + "/sundial?sslmode=disable&connect_timeout=5"
}
func (p *postgresServer) data() string { return filepath.Join(p.dir, "data") }

func (p *postgresServer) Start(ctx context.Context) error {
	if !p.inited {
		if err := os.MkdirAll(p.data(), 0o700); err != nil {
			return err
		}
		// The postgres user must reach its data directory through the suite's directory.
		if err := os.Chmod(p.dir, 0o755); err != nil {
			return err
		}
		if err := chownTo(p.data(), "postgres"); err != nil {
			return err
		}
		if err := runCmd(asUser(ctx, "postgres", filepath.Join(p.bin, "initdb"), "-D", p.data(), "-U", "postgres",
			"--auth=trust", "-E", "UTF8", "--no-sync")); err != nil {
			return err
		}
	}
	// Sockets go in the data directory: the default one belongs to the shared server.
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c max_connections=300", p.port, p.data())
	if err := runCmd(asUser(ctx, "postgres", filepath.Join(p.bin, "pg_ctl"), "-D", p.data(), "-l",
		filepath.Join(p.data(), "postgres.log"), "-o", opts, "-w", "-t", "60", "start")); err != nil {
		return err
	}
	base := "postgres://postgres@" + p.addr + "/postgres?sslmode=disable"
	if err := waitSQL(ctx, "pgx", base); err != nil {
		return err
	}
	if !p.inited {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "CREATE DATABASE sundial"); err != nil {
			return fmt.Errorf("chaos: create database: %w", err)
		}
		p.inited = true
	}
	return nil
}

// Crash is pg_ctl's immediate stop: every server process quits without a checkpoint, and the
// next start recovers from the WAL, as after a crash.
func (p *postgresServer) Crash(ctx context.Context) error {
	return runCmd(asUser(ctx, "postgres", filepath.Join(p.bin, "pg_ctl"), "-D", p.data(), "-m", "immediate", "-w", "stop"))
}

type mariadbServer struct {
	dir, addr string
	port      int
	inited    bool
	cmd       *exec.Cmd
	exited    chan struct{}
}

func (m *mariadbServer) Dialect() string { return "mysql" }
func (m *mariadbServer) Addr() string    { return m.addr }
func (m *mariadbServer) DSN(hostport string) string {
	return "mysql://chaos@tcp(" + hostport + ")/sundial?timeout=5s"
}
func (m *mariadbServer) data() string   { return filepath.Join(m.dir, "data") }
func (m *mariadbServer) socket() string { return filepath.Join(m.dir, "mysqld.sock") }

// osUser is the account mariadbd runs as: root may run it as itself only when it says so.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

func (m *mariadbServer) Start(ctx context.Context) error {
	if !m.inited {
		if err := os.MkdirAll(m.data(), 0o700); err != nil {
			return err
		}
		if err := runCmd(exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--datadir="+m.data(),
			"--user="+osUser(), "--auth-root-authentication-method=normal", "--skip-test-db")); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(filepath.Join(m.dir, "mariadb.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// Not under ctx: the server outlives the call; Crash and the suite's cleanup end it.
	cmd := exec.Command("mariadbd", "--no-defaults", "--datadir="+m.data(), "--user="+osUser(),
		"--port="+strconv.Itoa(m.port), "--bind-address=127.0.0.1", "--socket="+m.socket(),
		"--pid-file="+filepath.Join(m.dir, "mysqld.pid"), "--skip-name-resolve", "--max-connections=300",
		"--innodb-flush-log-at-trx-commit=2", "--skip-log-bin")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("chaos: start mariadbd: %w", err)
	}
	m.cmd, m.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); log.Close(); close(done) }(m.exited)
	sock := mysql.NewConfig()
	sock.User, sock.Net, sock.Addr = "root", "unix", m.socket()
	if err := waitSQL(ctx, "mysql", sock.FormatDSN()); err != nil {
		return err
	}
	if !m.inited {
		db, err := sql.Open("mysql", sock.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		for _, q := range []string{"CREATE DATABASE sundial", "CREATE USER 'chaos'@'%'",
			"GRANT ALL ON sundial.* TO 'chaos'@'%'"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("chaos: %s: %w", q, err)
			}
		}
		m.inited = true
	}
	return nil
}

// Crash kills mariadbd with SIGKILL; InnoDB recovers on the next start.
func (m *mariadbServer) Crash(ctx context.Context) error {
	if m.cmd == nil {
		return errors.New("chaos: mariadbd is not running")
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-m.exited:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.cmd = nil
	return nil
}
