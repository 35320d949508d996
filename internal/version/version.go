// Package version says which Sundial this binary is, for `sundial --version`, the API's
// /api/v1/info and the metrics' sundial_build_info.
package version

import (
	_ "embed"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set at release builds: go build -ldflags "-X github.com/sundial-scheduler/sundial/internal/version.version=v1.2.3".
var version string

// checkout is the version of the source tree, from the file VERSION (bumped at each release):
// a build from a checkout knows it without ldflags, and without the VCS stamp that
// -buildvcs=false (common in containers and CI) leaves out.
//
//go:embed VERSION
var checkout string

// Version is the release version, else the module version Go recorded (a tagged module
// dependency), else the checkout's VERSION; with the VCS revision when recorded.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	return fromBuild(version, bi, ok)
}

func fromBuild(release string, bi *debug.BuildInfo, ok bool) string {
	if release != "" {
		return release
	}
	v := strings.TrimSpace(checkout)
	if !ok {
		return v
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// modulePath is Sundial's module.
const modulePath = "github.com/sundial-scheduler/sundial"

// Module is the version of the Sundial module in this binary: Version in Sundial's own
// binary, the required module version in a program that embeds Sundial (an executor built
// on the SDK), "(unknown)" when Go recorded neither.
func Module() string {
	bi, ok := debug.ReadBuildInfo()
	if version != "" || !ok || bi.Main.Path == modulePath || bi.Main.Path == "" {
		return Version()
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			if d.Replace != nil && d.Replace.Version != "" {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "(unknown)"
}

// GoVersion is the Go release the binary was built with.
func GoVersion() string { return runtime.Version() }
