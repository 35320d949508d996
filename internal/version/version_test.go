package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionWithoutVCS: a build from a checkout without ldflags nor VCS stamp
// (-buildvcs=false) says the checkout's version, not "(devel)"; ldflags and a tagged module
// win, and a recorded revision is added.
func TestVersionWithoutVCS(t *testing.T) {
	file := strings.TrimSpace(checkout)
	if !strings.HasPrefix(file, "v") {
		t.Fatalf("VERSION holds %q, want a version such as v1.2.3", checkout)
	}
	devel := &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}
	stamped := &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}}
	tagged := &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.4.0"}}
	for _, tc := range []struct {
		release string
		bi      *debug.BuildInfo
		want    string
	}{
		{"", devel, file},
		{"", stamped, file + " 0123456789ab"},
		{"", tagged, "v1.4.0"},
		{"v2.0.0", devel, "v2.0.0"},
	} {
		if got := fromBuild(tc.release, tc.bi, true); got != tc.want {
			t.Errorf("fromBuild(%q, %+v) = %q, want %q", tc.release, tc.bi.Main, got, tc.want)
		}
	}
}
