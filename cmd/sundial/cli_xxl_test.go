package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/api"
)

// TestCLIXXLApp creates and updates an xxl-job app through the CLI: the generation is
// checked, the token comes from a file (or SUNDIAL_XXL_TOKEN) and is required, kept by an
// update, and never shown.
func TestCLIXXLApp(t *testing.T) {
	s := startAPIServer(t)
	if code, _, errOut := s.cli(t, "app", "create", "legacy", "--protocol", "xxl-job", "--xxl-version", "3.3"); code != 2 ||
		!strings.Contains(errOut, "xxl_access_token") {
		t.Fatalf("xxl-job app without a token: exit %d, %q: want 2 naming xxl_access_token", code, errOut)
	}
	if code, _, errOut := s.cli(t, "app", "create", "legacy", "--xxl-version", "3.3"); code != 2 || !strings.Contains(errOut, "protocol_version") {
		t.Fatalf("a generation without the xxl-job protocol: exit %d, %q: want 2 naming protocol_version", code, errOut)
	}
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte("the-executors-token-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := mustJSON[api.App](t, s, "app", "create", "legacy", "--protocol", "xxl-job", "--xxl-version", "3.4.2", "--xxl-token-file", tokFile)
	if a.Protocol != "xxl-job" || a.ProtocolVersion != "3.3" || !a.XXLAccessTokenSet {
		t.Fatalf("app create --protocol xxl-job: %+v", a)
	}
	a = mustJSON[api.App](t, s, "app", "update", "legacy", "--title", "Moved from XXL-JOB")
	if a.Title != "Moved from XXL-JOB" || a.ProtocolVersion != "3.3" || !a.XXLAccessTokenSet {
		t.Fatalf("app update keeps protocol and token: %+v", a)
	}
	got := s.mustCLI(t, "app", "get", "legacy")
	if !strings.Contains(got, "xxl-job 3.3 (access token set)") || strings.Contains(got, "the-executors-token-42") {
		t.Fatalf("app get:\n%s", got)
	}
	a = mustJSON[api.App](t, s, "app", "update", "legacy", "--protocol", "sundial")
	if a.Protocol != "sundial" || a.ProtocolVersion != "" || a.XXLAccessTokenSet {
		t.Fatalf("back to the sundial protocol: %+v", a)
	}
}
