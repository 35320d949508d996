package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/executor"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/secret"
)

// builtin is how every handler of Sundial's own is registered: for a run of a job with secret
// params, the values of those params are replaced by secret.Mask in everything the handler
// writes (its output lines) and returns (the result's message), whichever of its lines or
// errors quotes them, a server's answer echoing them included. Retries carry the same secret
// params and are scrubbed alike.
func builtin(h executor.Handler) executor.Handler {
	return func(ctx context.Context) error {
		run, _ := executor.RunFrom(ctx)
		if !run.ParamsSecret {
			return h(ctx)
		}
		r := secretReplacer(run.Params)
		defer func() {
			if p := recover(); p != nil {
				panic(r.Replace(fmt.Sprint(p))) // the executor reports a panic's value as the message
			}
		}()
		ctx = jobrun.WithLogger(ctx, slog.New(&scrubHandler{inner: executor.Logger(ctx).Handler(), r: r}))
		if err := h(ctx); err != nil {
			return &scrubbedError{err: err, msg: r.Replace(err.Error())}
		}
		return nil
	}
}

// secretReplacer masks the values of secret params: the params whole, and for the http
// handler's params the URL's user info, its query values, the headers' values and the body,
// each as written and as decoded. A short value is masked wherever it appears: a secret job's
// output may read oddly, but never shows its secrets.
func secretReplacer(params string) *strings.Replacer {
	vals := []string{params}
	var p httpParams
	if json.Unmarshal([]byte(params), &p) == nil {
		if u, err := url.Parse(p.URL); err == nil {
			if u.User != nil {
				pw, _ := u.User.Password()
				vals = append(vals, u.User.String(), u.User.Username(), pw)
			}
			for _, kv := range strings.Split(u.RawQuery, "&") {
				_, raw, _ := strings.Cut(kv, "=")
				dec, _ := url.QueryUnescape(raw)
				vals = append(vals, raw, dec)
			}
		}
		for _, v := range p.Headers {
			vals = append(vals, v)
		}
		vals = append(vals, p.Body)
	}
	// Longest first, so a value that holds another is masked whole.
	slices.SortFunc(vals, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	var pairs []string
	for _, v := range slices.Compact(vals) {
		if strings.TrimSpace(v) != "" {
			pairs = append(pairs, v, secret.Mask)
		}
	}
	return strings.NewReplacer(pairs...)
}

// scrubbedError is a handler's error with its message scrubbed; errors.Is and As still see
// the error it wraps.
type scrubbedError struct {
	err error
	msg string
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrubHandler scrubs a run's log records before the run's own handler formats them.
type scrubHandler struct {
	inner slog.Handler
	r     *strings.Replacer
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *scrubHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Replace(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i] = h.attr(a)
	}
	return &scrubHandler{inner: h.inner.WithAttrs(scrubbed), r: h.r}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{inner: h.inner.WithGroup(h.r.Replace(name)), r: h.r}
}

// attr is a with its key and values scrubbed, every value as the text the output shows.
func (h *scrubHandler) attr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindGroup {
		g := a.Value.Group()
		scrubbed := make([]any, len(g))
		for i, ga := range g {
			scrubbed[i] = h.attr(ga)
		}
		return slog.Group(h.r.Replace(a.Key), scrubbed...)
	}
	return slog.String(h.r.Replace(a.Key), h.r.Replace(a.Value.String()))
}
