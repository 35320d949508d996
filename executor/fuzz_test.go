package executor

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzProtocolDecoders sends any body to each of the executor's endpoints: it answers 200
// or 400, never a panic or a 500. No handler is registered, so no run starts.
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
	h := ex.routes()
	paths := []string{PathRun, PathKill, PathBeat, PathIdleBeat}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("%s %q: status %d", req.URL.Path, body, rec.Code)
		}
	})
}
