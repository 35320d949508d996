package server

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LoginLimits bound password guessing. Failed logins are counted per source address and
// per user name; past the free failures each further one doubles a wait (from Backoff up
// to MaxBackoff) during which that address or name is answered 429 without a password
// check. A success clears the name's and the address's count. Zero fields take defaults.
type LoginLimits struct {
	// UserFailures are the failures a user name may have before back-off. Default 5.
	UserFailures int
	// AddressFailures are the failures one source address may have before back-off,
	// over every name it tries. Default 20.
	AddressFailures int
	// Backoff is the first wait; MaxBackoff caps the doubling. Defaults 1 s and 15 min.
	Backoff, MaxBackoff time.Duration
	// Hashing caps the password checks (bcrypt, ~100 ms of a core each) running at once
	// over the whole server; more wait for a slot. Default: 4.
	Hashing int
	// PasswordCost is bcrypt's work factor for new passwords, and for the stand-in hash
	// an unknown user name is checked against, so that both take as long. Default
	// bcrypt.DefaultCost.
	PasswordCost int
}

func (l LoginLimits) withDefaults() LoginLimits {
	if l.UserFailures <= 0 {
		l.UserFailures = 5
	}
	if l.AddressFailures <= 0 {
		l.AddressFailures = 20
	}
	if l.Backoff <= 0 {
		l.Backoff = time.Second
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = 15 * time.Minute
	}
	if l.Hashing <= 0 {
		l.Hashing = 4
	}
	if l.PasswordCost <= 0 {
		l.PasswordCost = bcryptCost
	}
	return l
}

// maxLimiterKeys bounds the remembered names and addresses, so that a flood of made-up
// names cannot grow the map without end; past it the entries whose wait is over go.
const maxLimiterKeys = 10000

type failures struct {
	count int
	until time.Time // answered 429 before this
}

// loginLimiter keeps the failure counts and the hashing slots.
type loginLimiter struct {
	lim  LoginLimits
	now  func() time.Time
	slot chan struct{}

	mu   sync.Mutex
	keys map[string]*failures // "user:NAME" and "addr:IP"

	limited  *prometheus.CounterVec
	attempts *prometheus.CounterVec
	inFlight prometheus.Gauge
}

func newLoginLimiter(lim LoginLimits, now func() time.Time, reg *prometheus.Registry) *loginLimiter {
	l := &loginLimiter{lim: lim, now: now, slot: make(chan struct{}, lim.Hashing), keys: map[string]*failures{},
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sundial_login_limited_total",
			Help: "Logins answered 429 because their source address or user name is backing off after failures."},
			[]string{"by"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sundial_login_attempts_total",
			Help: "Logins by result: succeeded, failed (wrong name or password) or limited."}, []string{"result"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sundial_password_checks_in_flight",
			Help: "Password hashes being computed now (capped by the login hashing limit)."}),
	}
	for _, by := range []struct {
		name string
		n    int
	}{{"user", lim.UserFailures}, {"address", lim.AddressFailures}} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sundial_login_failure_limit",
			Help: "Failed logins allowed before back-off, by user name or source address.", ConstLabels: prometheus.Labels{"by": by.name}},
			func() float64 { return float64(by.n) }))
	}
	reg.MustRegister(l.limited, l.attempts, l.inFlight, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sundial_password_checks_limit", Help: "Password hashes computed at once at most."},
		func() float64 { return float64(lim.Hashing) }))
	return l
}

func sourceAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// errLoginLimited answers a login that must wait.
func errLoginLimited(wait time.Duration) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Code: "resource_exhausted",
		Message: "too many failed logins: try again in " + wait.Round(time.Second).String()}
}

// check returns the wait before a login for name from addr may be tried, 0 when now.
func (l *loginLimiter) check(name, addr string) (wait time.Duration, by string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range [...]struct{ key, by string }{{"user:" + name, "user"}, {"addr:" + addr, "address"}} {
		if f := l.keys[k.key]; f != nil && now.Before(f.until) {
			if d := f.until.Sub(now); d > wait {
				wait, by = d, k.by
			}
		}
	}
	if wait > 0 {
		l.limited.WithLabelValues(by).Inc()
		l.attempts.WithLabelValues("limited").Inc()
	}
	return wait, by
}

// failed counts a failed login and starts or doubles the back-off past the free failures.
func (l *loginLimiter) failed(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.attempts.WithLabelValues("failed").Inc()
	if len(l.keys) >= maxLimiterKeys {
		for k, f := range l.keys {
			if !now.Before(f.until) {
				delete(l.keys, k)
			}
		}
	}
	for _, k := range [...]struct {
		key  string
		free int
	}{{"user:" + name, l.lim.UserFailures}, {"addr:" + addr, l.lim.AddressFailures}} {
		f := l.keys[k.key]
		if f == nil {
			if len(l.keys) >= maxLimiterKeys {
				continue // full of names in back-off: the address's count still holds
			}
			f = &failures{}
			l.keys[k.key] = f
		}
		f.count++
		if over := f.count - k.free; over > 0 {
			wait := l.lim.Backoff << min(over-1, 30)
			if wait <= 0 || wait > l.lim.MaxBackoff {
				wait = l.lim.MaxBackoff
			}
			f.until = now.Add(wait)
		}
	}
}

// succeeded clears the counts of the name and the address.
func (l *loginLimiter) succeeded(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts.WithLabelValues("succeeded").Inc()
	delete(l.keys, "user:"+name)
	delete(l.keys, "addr:"+addr)
}

// hash runs f in one of the hashing slots, waiting for one until ctx ends.
func (l *loginLimiter) hash(ctx context.Context, f func()) error {
	select {
	case l.slot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.inFlight.Inc()
	defer func() {
		l.inFlight.Dec()
		<-l.slot
	}()
	f()
	return nil
}

// retryAfter sets the Retry-After header of a limited login.
func retryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
}
