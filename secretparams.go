package sundial

import (
	"errors"
	"fmt"

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
