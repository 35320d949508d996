package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// TestVersionEverywhere: the binary, the API's /info and the metrics' build info all say the
// same version.
func TestVersionEverywhere(t *testing.T) {
	v := version.Version()
	if code, out, _ := runCLI(t, "", "--version"); code != 0 || out != "sundial version "+v+"\n" {
		t.Errorf("sundial --version: exit %d, %q, want %q", code, out, v)
	}
	s := startAPIServer(t)
	if in := mustJSON[api.Info](t, s, "node", "info"); in.Version != v || in.GoVersion == "" || in.NodeID == "" {
		t.Errorf("node info: %+v, want version %q, the Go release and the node", in, v)
	}
	req, err := http.NewRequest("GET", s.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `sundial_build_info{goversion="`) || !strings.Contains(string(body), `version="`+v+`"} 1`) {
		t.Errorf("metrics have no sundial_build_info with version %q", v)
	}
}

// TestMigrateCommand: migrate status lists what a fresh database lacks, a server with
// --no-migrate refuses it, migrate up applies it all.
func TestMigrateCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sundial.db")
	code, out, errOut := runCLI(t, "", "migrate", "status", "--db", db)
	if code != 0 || !strings.HasPrefix(out, "VERSION") || !strings.Contains(out, "pending") || strings.Contains(out, "applied") {
		t.Fatalf("migrate status of a fresh database: exit %d\n%s%s", code, out, errOut)
	}
	pending := strings.Count(out, "pending")
	code, _, errOut = runCLI(t, "", "server", "--db", db, "--addr", "127.0.0.1:0", "--no-migrate")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("lacks %d migrations", pending)) || !strings.Contains(errOut, "sundial migrate up") {
		t.Errorf("server --no-migrate on a fresh database: exit %d, %q", code, errOut)
	}
	code, out, errOut = runCLI(t, "", "migrate", "up", "--db", db)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("Applied %d migrations", pending)) {
		t.Errorf("migrate up: exit %d, %q %q", code, out, errOut)
	}
	t.Setenv("SUNDIAL_DB", db)
	_, out, _ = runCLI(t, "", "migrate", "status")
	if strings.Count(out, "applied") != pending || strings.Contains(out, "pending") {
		t.Errorf("migrate status after up (SUNDIAL_DB):\n%s", out)
	}
	if _, out, _ = runCLI(t, "", "migrate", "up"); !strings.Contains(out, "Applied 0 migrations") {
		t.Errorf("migrate up again: %q", out)
	}
}

// TestServerConfigFile: --config takes the flags' settings from a YAML file, keyed by flag
// name, _ name or environment variable; the environment wins over the file and a flag over
// both; an unknown key is bad input. The database a refused --no-migrate start names shows
// which setting won.
func TestServerConfigFile(t *testing.T) {
	dir := t.TempDir()
	fileDB, envDB, flagDB := filepath.Join(dir, "file.db"), filepath.Join(dir, "env.db"), filepath.Join(dir, "flag.db")
	cfg := filepath.Join(dir, "sundial.yaml")
	write := func(body string) {
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(wantDB string, args ...string) {
		t.Helper()
		code, _, errOut := runCLI(t, "", append([]string{"server", "--config", cfg}, args...)...)
		if code != 1 || !strings.Contains(errOut, "the database "+wantDB+" lacks") {
			t.Errorf("server %v: exit %d, %q: want the --no-migrate refusal of %s", args, code, errOut, wantDB)
		}
	}
	t.Setenv("SUNDIAL_DB", "")
	os.Unsetenv("SUNDIAL_DB")
	write("db: " + fileDB + "\nno_migrate: true\nSUNDIAL_ADDR: 127.0.0.1:0\nlog-level: debug\n")
	refused(fileDB)
	refused(flagDB, "--db", flagDB)
	t.Setenv("SUNDIAL_DB", envDB)
	refused(envDB)
	refused(flagDB, "--db", flagDB)

	write("db: " + fileDB + "\nbogus: 1\n")
	if code, _, errOut := runCLI(t, "", "server", "--config", cfg); code != 2 || !strings.Contains(errOut, `unknown setting "bogus"`) {
		t.Errorf("an unknown key: exit %d, %q", code, errOut)
	}
	write("retention: [1, 2]\n")
	if code, _, errOut := runCLI(t, "", "server", "--config", cfg); code != 2 || !strings.Contains(errOut, "retention") {
		t.Errorf("a list value: exit %d, %q", code, errOut)
	}
}

// TestClusterKeyCommand: rotate adds generations (the first rotation of a database without
// a key makes generation 1); list shows them newest first, the two newest published.
func TestClusterKeyCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sundial.db")
	if code, _, errOut := runCLI(t, "", "migrate", "up", "--db", db); code != 0 {
		t.Fatalf("migrate up: %s", errOut)
	}
	for _, want := range []string{"generation 1", "generation 2", "generation 3"} {
		if code, out, errOut := runCLI(t, "", "cluster-key", "rotate", "--db", db); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("rotate: exit %d, %q %q; want %s", code, out, errOut, want)
		}
	}
	code, out, errOut := runCLI(t, "", "cluster-key", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[1], "3 ") || !strings.Contains(lines[2], "yes") ||
		!strings.Contains(lines[3], " no ") || strings.Contains(out, "PRIVATE") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
}
