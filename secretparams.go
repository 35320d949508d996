package sundial

import (
	"context"
	"errors"
	"fmt"

	"github.com/sundial-scheduler/sundial/alarm"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// sealParams makes row's params what the store keeps for j: sealed under the primary key
// when j.ParamsSecret, in clear otherwise. On an update (cur is the stored job) the mask
// the API shows in place of secret params keeps the stored secret, so a client that reads a
// job, changes another field and sends it back does not overwrite the secret with "***".
func (s *Scheduler) sealParams(j Job, row, cur *store.Job) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("sundial: job %s: %w", j.Name, schedule.Fieldf(field, format, args...))
	}
	masked := j.Params == secret.Mask && cur != nil && cur.ParamsSecret
	if !j.ParamsSecret {
		if masked {
			return bad("params", "%q stands for the stored secret params: send the params in clear to store them unsealed", secret.Mask)
		}
		row.ParamsSecret = false
		return nil
	}
	if IsScriptHandler(j.Handler) {
		return bad("params_secret", "the params of handler %q are a script, kept in clear as versions to compare: a script cannot be secret", j.Handler)
	}
	row.ParamsSecret = true
	if masked {
		row.Params = cur.Params // still sealed, under whichever key sealed it
		return nil
	}
	if j.Params == secret.Mask {
		return bad("params", "%q is the mask the API shows for secret params: send the params themselves", secret.Mask)
	}
	sealed, err := s.secrets.Seal(j.Params)
	if errors.Is(err, secret.ErrNoKey) {
		return bad("params_secret", "cannot store secret params: %v", err)
	}
	if err != nil {
		return fmt.Errorf("sundial: job %s: seal params: %w", j.Name, err)
	}
	row.Params = sealed
	return nil
}

// needsReseal reports whether a secret of j (its params, a chat or paging alarm target) is
// sealed under a key other than primary.
func needsReseal(j *store.Job, primary string) bool {
	if id, _ := secret.KeyID(j.Params); j.ParamsSecret && id != primary {
		return true
	}
	for _, t := range j.AlarmTargets {
		if id, ok := alarm.TargetKeyID(t); ok && id != primary {
			return true
		}
	}
	return false
}

// errUnopened marks a secret ResealSecrets cannot open: its key is not on the ring.
var errUnopened = errors.New("sealed under a key the ring lacks")

// ResealSecrets seals again under keys' primary key every job's secret params and chat or
// paging alarm targets and every
// xxl-job app's access token sealed under another key of the ring, and returns how many it
// resealed and how many it could not open (sealed under a key the ring lacks). Rotating a key: put the new key on every node's ring
// after the old one, then first; once this ran (a server runs it at start) and reports
// none left unopened, drop the old key.
func ResealSecrets(ctx context.Context, st store.Store, keys *secret.Keyring) (resealed, unopened int, err error) {
	primary := keys.Primary()
	if primary == "" {
		return 0, 0, nil
	}
	var after int64
	for {
		js, err := st.JobList(ctx, store.JobFilter{AfterID: after, Limit: 500})
		if err != nil {
			return resealed, unopened, fmt.Errorf("sundial: reseal secrets: %w", err)
		}
		for _, j := range js {
			after = j.ID
			if !needsReseal(j, primary) {
				continue
			}
			err := store.InTx(ctx, st, func(q store.Querier) error {
				cur, err := q.JobGet(ctx, j.ID)
				if err != nil {
					return err
				}
				if !needsReseal(cur, primary) {
					return nil // changed meanwhile
				}
				if id, _ := secret.KeyID(cur.Params); cur.ParamsSecret && id != primary {
					plain, err := keys.Open(cur.Params)
					if err != nil {
						return errUnopened
					}
					if cur.Params, err = keys.Seal(plain); err != nil {
						return err
					}
				}
				for i, t := range cur.AlarmTargets {
					if id, ok := alarm.TargetKeyID(t); !ok || id == primary {
						continue
					}
					plain, err := alarm.OpenTarget(keys, t)
					if err != nil {
						return errUnopened
					}
					if cur.AlarmTargets[i], err = alarm.SealTarget(keys, plain); err != nil {
						return err
					}
				}
				return q.JobUpdate(ctx, cur)
			})
			switch {
			case errors.Is(err, store.ErrNotFound):
			case errors.Is(err, errUnopened):
				unopened++
			case err != nil:
				return resealed, unopened, fmt.Errorf("sundial: reseal the secrets of job %d: %w", j.ID, err)
			default:
				resealed++
			}
		}
		if len(js) < 500 {
			break
		}
	}
	// The xxl-job apps' access tokens are sealed with the same keys, each bound to its app.
	apps, err := st.AppList(ctx)
	if err != nil {
		return resealed, unopened, fmt.Errorf("sundial: reseal secrets: %w", err)
	}
	for _, a := range apps {
		if id, _ := secret.KeyID(a.XXLTokenSealed); a.XXLTokenSealed == "" || id == primary {
			continue
		}
		err := store.InTx(ctx, st, func(q store.Querier) error {
			cur, err := q.AppGet(ctx, a.Name)
			if err != nil {
				return err
			}
			if id, _ := secret.KeyID(cur.XXLTokenSealed); cur.XXLTokenSealed == "" || id == primary {
				return nil // changed meanwhile
			}
			plain, err := keys.OpenFor(cur.XXLTokenSealed, cur.Name)
			if err != nil {
				return errUnopened
			}
			if cur.XXLTokenSealed, err = keys.SealFor(plain, cur.Name); err != nil {
				return err
			}
			return q.AppPut(ctx, cur)
		})
		switch {
		case errors.Is(err, store.ErrNotFound):
		case errors.Is(err, errUnopened):
			unopened++
		case err != nil:
			return resealed, unopened, fmt.Errorf("sundial: reseal the access token of app %q: %w", a.Name, err)
		default:
			resealed++
		}
	}
	return resealed, unopened, nil
}
