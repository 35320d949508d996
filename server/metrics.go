package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/engine"
	"github.com/sundial-scheduler/sundial/internal/version"
)

// metrics is what /metrics serves: the engine's counters as they are, the runs of the
// handlers this server registered (by outcome and lateness), HTTP traffic, and the Go
// runtime. Its registry is the server's own, so two servers in one test process do not
// collide.
type metrics struct {
	reg      *prometheus.Registry
	runs     *prometheus.CounterVec
	lateness prometheus.Histogram
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(e *engine.Engine, rs *dispatch.Stats) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	st := e.Stats()
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(read()) })
	}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sundial_executions_total",
		Help: "Executions of this node's handlers by outcome (succeeded, failed, canceled: stopped by a timeout, " +
			"a replacing fire or shutdown)."}, []string{"state"})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sundial_fire_lateness_seconds",
		Help:    "How long after its scheduled time a fire started running on this node.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sundial_http_requests_total",
		Help: "HTTP requests by route and status code."}, []string{"route", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sundial_http_request_duration_seconds",
		Help: "HTTP request latency by route.", Buckets: prometheus.DefBuckets}, []string{"route"})
	// One series per reason of sundial_remote_dispatch_failures_total; no_handler is the
	// one to alert on: jobs name a handler no executor of their app has (a typo, or an
	// executor deployed without it), and every fire fails until someone fixes it.
	for _, f := range []struct {
		reason string
		read   func() int64
	}{{"no_executor", rs.NoExecutor.Load}, {"no_handler", rs.NoHandler.Load},
		{"unreachable", rs.Unreachable.Load}, {"refused", rs.Refused.Load}, {"not_owned", rs.NotOwned.Load}, {"busy", rs.Busy.Load}} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sundial_remote_dispatch_failures_total",
			Help: "Fires of remote jobs this node could not hand to an executor, by reason: no_executor (none of " +
				"the app online), no_handler (none online has the job's handler), unreachable, refused, not_owned " +
				"(the cluster had declared this node dead and the run lost), busy (the executors held as many runs as they may " +
				"until the dispatch wait ran out).",
			ConstLabels: prometheus.Labels{"reason": f.reason}}, func() float64 { return float64(f.read()) }))
	}
	m.reg.MustRegister(
		counter("sundial_remote_dispatch_unanswered_total", "Runs sent to an executor that gave no answer saying whether it "+
			"took them (a stream closed, a timeout, a 5xx): left to its heartbeats, which list the runs it holds.", rs.Unanswered.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_remote_dispatch_waiting", Help: "Fires waiting for an executor " +
			"to take them: none of their app online, or every one busy (holding as many runs as it may) or not taking runs."},
			func() float64 { return float64(rs.Waiting.Load()) }),
		counter("sundial_fires_total", "Fires this node ran (won the acquired to running compare-and-set).", st.Fired.Load),
		counter("sundial_fires_acquired_total", "Fires this node acquired.", st.Acquired.Load),
		counter("sundial_fires_lost_races_total", "Fires this node acquired but lost before running.", st.LostRaces.Load),
		counter("sundial_misfires_total", "Triggers whose misfire policy this node applied.", st.Misfired.Load),
		counter("sundial_executions_completed_total", "Execution results this node wrote.", st.Completed.Load),
		counter("sundial_executions_recovered_total", "Executions of dead nodes (or of this node's earlier lives) this node recovered.", st.Recovered.Load),
		counter("sundial_node_rejoins_total", "Times the cluster declared this node dead and it joined again as a new life.", st.Rejoined.Load),
		counter("sundial_executions_lost_on_executor_total", "Runs on executors this node declared lost: the executor "+
			"went silent, restarted, or stopped reporting them.", st.LostOnExecutor.Load),
		counter("sundial_executions_late_results_total", "Results this node recorded for runs already declared lost.", st.LateResults.Load),
		counter("sundial_executions_killed_total", "In-process runs this node canceled on a kill request.", st.Killed.Load),
		counter("sundial_fires_quota_delayed_total", "Fires this node started late under their app's fire-rate quota (--max-fires-per-app).", st.QuotaDelayed.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_leader", Help: "1 while this node holds the leader lease."},
			func() float64 {
				if e.IsLeader() {
					return 1
				}
				return 0
			}),
		// Under overload a node keeps firing, late: these say how late, how much waits, and
		// whether its heartbeats (its fence) keep up.
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_fire_late_seconds",
			Help: "How late past its scheduled time the last batch of fires this node started was."},
			func() float64 { return float64(st.LateMs.Load()) / 1000 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_fires_backlog",
			Help: "Fires this node acquired and holds, not yet started."},
			func() float64 { return float64(e.Backlog()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_heartbeat_age_seconds",
			Help: "How long ago this node's last heartbeat that succeeded was sent; -1 when it has none (its fence lapses a node timeout after it)."},
			func() float64 {
				if age, ok := e.HeartbeatAge(); ok {
					return age.Seconds()
				}
				return -1
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_build_info", Help: "1, labelled with the version and Go release of this node's binary.",
			ConstLabels: prometheus.Labels{"version": version.Version(), "goversion": version.GoVersion()}}, func() float64 { return 1 }),
		m.runs, m.lateness, m.requests, m.duration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe wraps a handler to count its runs and their lateness.
func (m *metrics) observe(h sundial.Handler) sundial.Handler {
	return func(ctx context.Context) error {
		if run := sundial.ExecutionFrom(ctx); run != nil && !run.FiredAt.IsZero() {
			m.lateness.Observe(max(run.FiredAt.Sub(run.ScheduledAt), 0).Seconds())
		}
		err := h(ctx)
		state := "succeeded"
		switch {
		case err != nil && ctx.Err() != nil:
			state = "canceled"
		case err != nil:
			state = "failed"
		}
		m.runs.WithLabelValues(state).Inc()
		return err
	}
}

// statusWriter records the status a handler sent. It passes Flush through for event streams.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument logs and counts every request by its route pattern (not its path, which would
// give every job id its own series).
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		d := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(d.Seconds())
		s.log.Log(r.Context(), requestLogLevel(r.URL.Path, sw.status), "http", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration_ms", d.Milliseconds(), "remote", r.RemoteAddr)
	})
}

// requestLogLevel is info for what people and their programs ask of the API, and debug for
// the machine traffic that comes every second or so: scrapes, probes, and the executors'
// heartbeats, output lines and results (their failures still show: a 5xx is a warning).
func requestLogLevel(path string, status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelWarn
	case !strings.HasPrefix(path, "/api/"), strings.HasPrefix(path, "/api/v1/executor/"):
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
