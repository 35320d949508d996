package sundial

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/xxljob"
)

// App is an executor group: the executors that run the remote jobs naming it.
type App struct {
	// Name is what jobs name (Job.App) and what executors register under.
	Name  string
	Title string
	// AddressMode is store.AddressAuto (the default: the executors that register) or
	// store.AddressManual (Addresses).
	AddressMode store.AddressMode
	// Addresses are the base URLs (http://host:port) of a manual app's executors.
	Addresses []string
	// Protocol is the wire protocol its executors speak: store.ProtocolSundial (the default)
	// or store.ProtocolXXLJob, whose ProtocolVersion is the XXL-JOB generation.
	Protocol        string
	ProtocolVersion string
	// XXLTokenHash and XXLTokenSealed set an xxl-job app's access token (its SHA-256, and the
	// token sealed with the server's secret key: see docs/security.md); empty keeps the token
	// the app has. An app that stops being xxl-job loses its token.
	XXLTokenHash, XXLTokenSealed string
}

// PutApp creates or replaces an app, checked as AppRow checks it, and returns it as stored.
func (s *Scheduler) PutApp(ctx context.Context, a App) (*store.App, error) {
	var row *store.App
	err := store.InTx(ctx, s.store, func(q store.Querier) (err error) {
		row, err = s.PutAppTx(ctx, q, a)
		return err
	})
	return row, err
}

// PutAppTx is PutApp inside the caller's transaction.
func (s *Scheduler) PutAppTx(ctx context.Context, q store.Querier, a App) (*store.App, error) {
	row, err := AppRow(a)
	if err != nil {
		return nil, err
	}
	// Replacing an xxl-job app without a new token keeps its token.
	cur, err := q.AppGet(ctx, a.Name)
	switch {
	case row.Protocol != store.ProtocolXXLJob:
		row.XXLTokenHash, row.XXLTokenSealed = "", ""
	case row.XXLTokenSealed != "":
	case err == nil:
		row.XXLTokenHash, row.XXLTokenSealed = cur.XXLTokenHash, cur.XXLTokenSealed
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	if a.XXLTokenHash != "" {
		if err := tokenUnshared(ctx, q, a.Name, a.XXLTokenHash); err != nil {
			return nil, err
		}
	}
	if err := q.AppPut(ctx, row); err != nil {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	return row, nil
}

// ClearSecretsWarning warns when the secret params of app's jobs would travel in clear: a
// manual address over http:// receives them with every /run (the signature protects the
// call from being altered or replayed, not from being read). It returns "" when none would.
func ClearSecretsWarning(ctx context.Context, q store.Querier, app *store.App) (string, error) {
	if app == nil || app.AddressMode != store.AddressManual {
		return "", nil
	}
	var plain []string
	for _, a := range app.Addresses {
		if strings.HasPrefix(strings.ToLower(a), "http://") {
			plain = append(plain, a)
		}
	}
	if len(plain) == 0 {
		return "", nil
	}
	jobs, err := q.JobList(ctx, store.JobFilter{App: app.Name, ParamsSecret: true, Limit: 1})
	if err != nil {
		return "", fmt.Errorf("sundial: app %s: jobs with secret params: %w", app.Name, err)
	}
	if len(jobs) == 0 {
		return "", nil
	}
	return fmt.Sprintf("app %s has jobs with secret params (%s, ...) and manual addresses without TLS (%s): "+
		"their params travel in clear to these addresses; use https:// addresses", app.Name, jobs[0].Name, strings.Join(plain, ", ")), nil
}

// tokenUnshared refuses an access token another app has: a token names its app to the server
// (an XXL-JOB callback is taken for the app whose token it carries), and a shared one would let
// one app's executors act as the other's.
func tokenUnshared(ctx context.Context, q store.Querier, name, hash string) error {
	apps, err := q.AppList(ctx)
	if err != nil {
		return fmt.Errorf("sundial: app %s: %w", name, err)
	}
	for _, other := range apps {
		if other.Name != name && subtle.ConstantTimeCompare([]byte(other.XXLTokenHash), []byte(hash)) == 1 {
			// As the database's unique key refuses it when two apps race for one token.
			return fmt.Errorf("sundial: app %s: %w: give each app's executors a token of their own", name,
				&store.ExistsError{Kind: "xxl-job access token of app", Key: name, Field: "xxl_access_token", Holder: "app " + other.Name})
		}
	}
	return nil
}

// AppRow validates a and returns the row PutApp stores: every caller that makes apps (the
// REST API, the console, an import) checks them here. A server's own limits on addresses
// (--executor-networks) are the server's to add.
func AppRow(a App) (*store.App, error) {
	bad := func(field, format string, args ...any) (*store.App, error) {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, schedule.Fieldf(field, format, args...))
	}
	if err := CheckName("name", a.Name); err != nil {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	if len(a.Name) > 190 {
		return bad("name", "want 1 to 190 characters, got %d", len(a.Name))
	}
	mode := a.AddressMode
	switch mode {
	case "":
		mode = store.AddressAuto
	case store.AddressAuto, store.AddressManual:
	default:
		return bad("address_mode", "want auto or manual, got %q", a.AddressMode)
	}
	if mode == store.AddressManual && len(a.Addresses) == 0 {
		return bad("addresses", "an app in manual mode needs at least one address")
	}
	for i, addr := range a.Addresses {
		if !strings.HasPrefix(addr, "http://") && !strings.HasPrefix(addr, "https://") {
			return bad(fmt.Sprintf("addresses[%d]", i), "want an executor's base URL (http://host:port), got %q", addr)
		}
	}
	protocol, version, err := AppProtocol(a.Protocol, a.ProtocolVersion)
	if err != nil {
		return nil, fmt.Errorf("sundial: app %s: %w", a.Name, err)
	}
	return &store.App{Name: a.Name, Title: a.Title, AddressMode: mode, Addresses: slices.Clone(a.Addresses),
		Protocol: protocol, ProtocolVersion: version, XXLTokenHash: a.XXLTokenHash, XXLTokenSealed: a.XXLTokenSealed}, nil
}

// AppProtocol checks an app's protocol and generation and returns them as stored: protocol
// "" is sundial, whose apps have no generation; an xxl-job app needs one of 2.x, 3.3, 3.5 (a
// release number such as 2.4.2 or 3.4.2 is taken as the generation it speaks). A bad value is
// a *FieldError naming protocol or protocol_version.
func AppProtocol(protocol, version string) (string, string, error) {
	switch protocol {
	case "", store.ProtocolSundial, "native":
		if version != "" {
			return "", "", schedule.Fieldf("protocol_version", "only an xxl-job app has a protocol version, got %q", version)
		}
		return store.ProtocolSundial, "", nil
	case store.ProtocolXXLJob:
		if version == "" {
			return "", "", schedule.Fieldf("protocol_version", "an xxl-job app needs its executors' generation: 2.x, 3.3 or 3.5")
		}
		gen, err := xxljob.ParseGeneration(version)
		if err != nil {
			return "", "", &schedule.FieldError{Field: "protocol_version", Err: err}
		}
		return store.ProtocolXXLJob, string(gen), nil
	}
	return "", "", schedule.Fieldf("protocol", "want sundial or xxl-job, got %q", protocol)
}

// MinTokenLen is the shortest secret an executor may present, the global executor token and
// an xxl-job app's access token alike: shorter ones are guessed.
const MinTokenLen = 16

// XXLDefaultToken is XXL-JOB's shipped access token, scanned for on the internet: Sundial
// never takes it.
const XXLDefaultToken = "default_token"

// CheckXXLToken checks an xxl-job app's access token as it is set: it must be given (there
// is no default, and none is made up: the executors already have theirs), must not be
// XXL-JOB's public default, and must have MinTokenLen characters. A bad one is a *FieldError
// naming xxl_access_token. (That no other app has it is PutAppTx's check.)
func CheckXXLToken(token string) error {
	switch {
	case token == "":
		return schedule.Fieldf("xxl_access_token", "an xxl-job app needs its access token (the executors' xxl.job.accessToken) set explicitly: there is no default")
	case token == XXLDefaultToken:
		return schedule.Fieldf("xxl_access_token", "%q is XXL-JOB's public default token, which is scanned for: set a secret token on the executors and here", XXLDefaultToken)
	case len(token) < MinTokenLen:
		return schedule.Fieldf("xxl_access_token", "at least %d characters, as every executor token, got %d", MinTokenLen, len(token))
	case len(token) > 255:
		return schedule.Fieldf("xxl_access_token", "at most 255 characters (XXL-JOB's column), got %d", len(token))
	}
	return nil
}
