package main

import (
	"go/version"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestGoModMinimumIsPatched: go.mod's go line is the Go that builds Sundial wherever
// GOTOOLCHAIN=local (a common setting) makes the go command ignore a toolchain line, so the
// patched release must be the go line itself, and this binary must have been built with it.
func TestGoModMinimumIsPatched(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var goLine, toolchain string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goLine = "go" + strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "toolchain "); ok {
			toolchain = strings.TrimSpace(v)
		}
	}
	if !version.IsValid(goLine) {
		t.Fatalf("go.mod's go line %q", goLine)
	}
	if toolchain != "" && version.Compare(toolchain, goLine) > 0 {
		t.Errorf("go.mod: go line %s, toolchain %s: with GOTOOLCHAIN=local Sundial builds with %s", goLine, toolchain, goLine)
	}
	if version.Compare(runtime.Version(), goLine) < 0 {
		t.Errorf("built with %s, older than go.mod's %s", runtime.Version(), goLine)
	}
}
