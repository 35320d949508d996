// Package otlp wires OpenTelemetry's SDK and its OTLP exporters (HTTP and gRPC) for the
// binary: the engine and the executor SDK take a tracer provider through the OpenTelemetry API,
// and only cmd/sundial imports this package, so an embedder links no exporter it did not ask for.
package otlp

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Provider returns a tracer provider that exports by OTLP to endpoint, over HTTP (protocol
// "http/protobuf", the default, as OpenTelemetry's own) or gRPC ("grpc"); protocol "" reads
// OTEL_EXPORTER_OTLP_PROTOCOL. The endpoint is a URL (http://collector:4318 for HTTP, whose
// /v1/traces receives the spans; http://collector:4317 for gRPC; https for TLS). Its
// Shutdown flushes the spans not yet sent.
func Provider(ctx context.Context, endpoint, protocol, service string) (*sdktrace.TracerProvider, error) {
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	var err error
	switch strings.ToLower(protocol) {
	case "", "http/protobuf", "http":
		// As OTEL_EXPORTER_OTLP_ENDPOINT: the base URL of the collector, the traces go to
		// its /v1/traces (a URL with a path of its own is taken as it is).
		if u, perr := url.Parse(endpoint); perr == nil && strings.Trim(u.Path, "/") == "" {
			u.Path = "/v1/traces"
			endpoint = u.String()
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	default:
		return nil, fmt.Errorf("otlp: OTLP protocol %q: want http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: OTLP exporter to %q: %w", endpoint, err)
	}
	return NewProvider(sdktrace.NewBatchSpanProcessor(exp), service), nil
}

// NewProvider is the SDK's tracer provider with sp, naming the service (tests pass a
// processor over tracetest's in-memory exporter).
func NewProvider(sp sdktrace.SpanProcessor, service string) *sdktrace.TracerProvider {
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service))
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
}
