package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineLinksNoExporter: the engine (and so every embedder of it) takes a tracer provider
// through the OpenTelemetry API and links neither the SDK nor an OTLP exporter with its gRPC
// stack; the binary wires those (internal/tracing/otlp, imported by cmd/sundial only).
func TestEngineLinksNoExporter(t *testing.T) {
	for _, pkg := range []string{".", ".."} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "grpc") || strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk") ||
				strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters") {
				t.Errorf("go list -deps %s: links %s", pkg, dep)
			}
		}
	}
}
