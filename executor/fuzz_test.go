package executor

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
)

// FuzzProtocolDecoders sends any body to each of the executor's endpoints: it answers 200
// or 400, never a panic or a 500 (each signed, as the server's calls are). No handler is registered, so no run starts.
func FuzzProtocolDecoders(f *testing.F) {
	for i, seed := range []string{
		`{"execution_id":1,"job_id":2,"handler":"none","params":"x","timeout_ms":10,"concurrency":"serial"}`,
		`{"execution_id":3}`, `{}`, `{"job_id":4}`,
	} {
		f.Add(byte(i), []byte(seed))
	}
	const token = "fuzz-executor-token"
	ex, err := New(Config{Server: "http://127.0.0.1:1", Token: token, App: "fuzz", SpoolDir: f.TempDir()})
	if err != nil {
		f.Fatal(err)
	}
	priv, pub, err := execsign.NewKey()
	if err != nil {
		f.Fatal(err)
	}
	signer, err := execsign.NewSigner(priv)
	if err != nil {
		f.Fatal(err)
	}
	if err := ex.verify.SetKeys([]string{pub}); err != nil {
		f.Fatal(err)
	}
	h := ex.routes()
	paths := []string{wire.PathRun, wire.PathKill, wire.PathBeat, wire.PathIdleBeat}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], bytes.NewReader(body))
		if err := signer.Sign(req, req.URL.Path, body, execsign.Target{App: "fuzz", Instance: ex.instance}, time.Now()); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("%s %q: status %d", req.URL.Path, body, rec.Code)
		}
	})
}

func TestStorableLine(t *testing.T) {
	long := strings.Repeat("é", wire.MaxLineBytes) // two bytes each: cut inside a character
	for in, want := range map[string]string{"plain": "plain", "a\x00b": "a\uFFFDb", "bad \xff": "bad \uFFFD"} {
		if got := storableLine(in); got != want {
			t.Errorf("storableLine(%q) = %q, want %q", in, got, want)
		}
	}
	if got := storableLine(long); len(got) > wire.MaxLineBytes || !utf8.ValidString(got) {
		t.Errorf("a long line became %d bytes (valid UTF-8: %v)", len(got), utf8.ValidString(got))
	}
}
