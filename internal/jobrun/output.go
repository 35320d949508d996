package jobrun

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// OutputHandler is the slog.Handler of a run's logger: each record becomes one output line,
// "message key=value …", prefixed with the level unless it is INFO; a value with a blank,
// '=', a quote or a control character is quoted. Attributes of groups are named group.key.
type OutputHandler struct {
	write  func(at time.Time, line string)
	pre    string // attributes from WithAttrs, formatted
	prefix string // group prefix from WithGroup, "g." or ""
}

// NewOutputHandler returns a handler that gives each formatted line to write, with the
// record's time (zero when the record has none). write may be called from several
// goroutines at once, as a handler's logger may be.
func NewOutputHandler(write func(at time.Time, line string)) *OutputHandler {
	return &OutputHandler{write: write}
}

// Enabled reports true: a run's output keeps every level.
func (h *OutputHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle formats r as one line.
func (h *OutputHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Level != slog.LevelInfo {
		b.WriteString(r.Level.String())
		b.WriteByte(' ')
	}
	b.WriteString(r.Message)
	b.WriteString(h.pre)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	h.write(r.Time, b.String())
	return nil
}

// WithAttrs returns a handler whose lines carry attrs.
func (h *OutputHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.pre)
	for _, a := range attrs {
		appendAttr(&b, h.prefix, a)
	}
	return &OutputHandler{write: h.write, pre: b.String(), prefix: h.prefix}
}

// WithGroup returns a handler that names later attributes name.key.
func (h *OutputHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &OutputHandler{write: h.write, pre: h.pre, prefix: h.prefix + name + "."}
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix + a.Key)
	b.WriteByte('=')
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " =\"\n\t") {
		v = strconv.Quote(v)
	}
	b.WriteString(v)
}
