package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

var bannerPassword = regexp.MustCompile(`with the password:\s+(\S+)`)

// TestCLISecretParams runs `sundial server` with SUNDIAL_SECRET_KEY as a real process: the
// CLI stores secret params from a file, shows them masked, the SQLite files (WAL included)
// never hold them in clear, and a restart with a new key first reseals them under it.
func TestCLISecretParams(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	db := filepath.Join(dir, "sundial.db")
	key := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	const secretText = "pg-password=tr0ub4dor-and-3"

	p := startServer(t, bin, dir, "--db", db, "SUNDIAL_SECRET_KEY=k1:"+key(1))
	m := bannerPassword.FindStringSubmatch(p.banner)
	if m == nil {
		t.Fatalf("no admin password in the banner:\n%s", p.banner)
	}
	s := &apiServer{url: p.url, password: m[1]}
	s.token = s.createToken(t)
	paramsFile := filepath.Join(dir, "params")
	if err := os.WriteFile(paramsFile, []byte(secretText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.mustCLI(t, "job", "create", "backup", "--handler", "noop", "--params-file", paramsFile, "--params-secret")
	if out := s.mustCLI(t, "job", "get", "backup"); !strings.Contains(out, "*** (secret)") || strings.Contains(out, "tr0ub4dor") {
		t.Fatalf("job get shows:\n%s", out)
	}
	j := mustJSON[api.Job](t, s, "job", "get", "backup")
	if j.Params != "***" || !j.ParamsSecret {
		t.Fatalf("job get -o json: params %q secret %v", j.Params, j.ParamsSecret)
	}
	// An update of another setting keeps the secret (the CLI sends the mask back).
	s.mustCLI(t, "job", "update", "backup", "--description", "nightly")
	p.stop(t)
	raw := dbBytes(t, db)
	if bytes.Contains(raw, []byte("tr0ub4dor")) {
		t.Fatal("the SQLite files hold the secret params in clear")
	}
	if !bytes.Contains(raw, []byte("sdl1:k1:")) {
		t.Fatal("the SQLite files hold no params sealed under k1")
	}

	// Rotation: the new key first, the old one second; the start reseals under k2.
	p = startServer(t, bin, dir, "--db", db, "SUNDIAL_SECRET_KEY=k2:"+key(2)+",k1:"+key(1))
	p.stop(t)
	if logs := p.stderr.String(); !strings.Contains(logs, "resealed=1") || !strings.Contains(logs, "unopened=0") {
		t.Fatalf("the start after rotation did not report the reseal:\n%s", logs)
	}
	if raw := dbBytes(t, db); bytes.Contains(raw, []byte("tr0ub4dor")) || !bytes.Contains(raw, []byte("sdl1:k2:")) {
		t.Fatal("after the rotation the params are not sealed under k2 only")
	}
}

// dbBytes is the SQLite database and its WAL, as a backup or a thief would copy them.
func dbBytes(t *testing.T, db string) []byte {
	t.Helper()
	var all []byte
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
