package alarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/maintenance"
	"github.com/sundial-scheduler/sundial/secret"
	"github.com/sundial-scheduler/sundial/store"
)

// Config configures a Sender. Store is required.
type Config struct {
	Store store.Store
	SMTP  SMTP
	// HTTPClient posts webhooks. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Interval is how often the leader looks for pending alarms. Default 10 s (XXL-JOB's
	// alarm scan).
	Interval time.Duration
	// Attempts is how many times one target is tried before the alarm is marked failed.
	// Default 3.
	Attempts int
	// Backoff is the pause before the second attempt, doubled before each further one.
	// Default 5 s.
	Backoff time.Duration
	// Timeout bounds one attempt. Default 15 s.
	Timeout time.Duration
	// ResendAfter is how long an alarm may stay sending (claimed by a sweep) before a sweep
	// takes it as abandoned by a node that died mid-delivery and sends it again. It must
	// exceed the longest delivery: every target's attempts, timeouts and pauses. Default
	// 10 min.
	ResendAfter time.Duration
	Logger      *slog.Logger
	// Secrets opens the sealed chat and paging targets ("slack:...", see SealTarget).
	Secrets *secret.Keyring
	// PagerDutyURL replaces PagerDuty's events URL (a proxy, a test's fake). Default
	// PagerDutyEventsURL.
	PagerDutyURL string
	// Clock paces the sweeps and the pauses between attempts. Default: the system clock.
	Clock clock.Clock
}

// Sender delivers pending alarms while it runs; it is one of the leader's duties, started and
// stopped with the node's leadership like the services of package maintenance (same
// contract).
//
// Exactly once: a sweep first claims a batch with a compare-and-set pending → sending and
// delivers only the alarms it won, then records sent or failed (a compare-and-set from
// sending). Two leaders that overlap for a moment (a lease that expired under a paused
// process) cannot both win an alarm, so no target hears of a failure twice. The claim is
// taken before delivery, not after, because the other order (deliver, then CAS pending →
// sent) lets both leaders deliver before either records it.
//
// A node that dies mid-delivery leaves its alarms "sending": after ResendAfter a sweep claims
// them again (ExecutionsAlarmReclaim) and delivers them to every target. A target may then
// hear of the failure twice: a webhook carries the execution's idempotency key, so its
// receiver can drop the second; an e-mail cannot be taken back, so e-mail alarms are
// at-least-once.
//
// A delivery that fails is retried Attempts times with a growing pause, per target, inside
// the claim (so targets already told are not told again); then the alarm is marked failed.
//
// Stop is bounded: deliveries end when it cancels them, and what they leave to record (an
// alarm put back to pending, an outcome the canceled sweep could not write) is written in
// one statement per state within recordTimeout, database or not.
type Sender struct {
	*maintenance.Periodic
	cfg Config
	log *slog.Logger
}

// recordTimeout bounds the writes a stopped sweep still owes: the outcomes of its alarms.
// An alarm whose outcome is not written stays sending, and a later sweep sends it again
// after ResendAfter.
const recordTimeout = 2 * time.Second

// New returns a Sender; it does nothing until Start.
func New(cfg Config) (*Sender, error) {
	if cfg.Store == nil {
		return nil, errors.New("alarm: Config.Store is required")
	}
	if cfg.SMTP.Addr != "" && cfg.SMTP.From == "" {
		return nil, fmt.Errorf("alarm: SMTP server %s: a sender address (From) is required", cfg.SMTP.Addr)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.ResendAfter <= 0 {
		cfg.ResendAfter = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	s := &Sender{cfg: cfg, log: cfg.Logger}
	s.Periodic = maintenance.NewPeriodic("alarm delivery", cfg.Interval, cfg.Clock, cfg.Logger, func(ctx context.Context) error {
		_, err := s.Sweep(ctx)
		return err
	})
	return s, nil
}

// Result counts what a sweep did with the alarms it claimed.
type Result struct {
	Sent, Failed, Dropped int
}

// sweepBatch is how many alarms a sweep claims at once; parallel is how many it delivers
// side by side, so one slow target does not hold up the rest.
const (
	sweepBatch = 100
	parallel   = 4
)

// Sweep claims every pending alarm it can, and every alarm abandoned sending for longer
// than ResendAfter, and delivers them. It runs whether or not the loop does, so tests and
// tools can drive it.
func (s *Sender) Sweep(ctx context.Context) (Result, error) {
	var res Result
	for {
		stale, err := s.cfg.Store.ExecutionsAlarmReclaim(ctx, s.cfg.ResendAfter, sweepBatch)
		if err != nil || len(stale) == 0 {
			if err != nil {
				return res, fmt.Errorf("reclaim abandoned alarms: %w", err)
			}
			break
		}
		s.log.Warn("sending alarms again: their delivery was abandoned", "count", len(stale))
		if err := s.deliverAll(ctx, stale, &res); err != nil || len(stale) < sweepBatch {
			if err != nil {
				return res, err
			}
			break
		}
	}
	after := int64(0)
	for {
		pending, err := s.cfg.Store.ExecutionsAlarmPending(ctx, after, sweepBatch)
		if err != nil || len(pending) == 0 {
			return res, err
		}
		after = pending[len(pending)-1].ID
		ids := make([]int64, len(pending))
		for i, x := range pending {
			ids[i] = x.ID
		}
		won, err := s.cfg.Store.ExecutionsSetAlarm(ctx, ids, store.AlarmPending, store.AlarmSending)
		if err != nil {
			return res, fmt.Errorf("claim %d alarms: %w", len(ids), err)
		}
		mine := make(map[int64]bool, len(won))
		for _, id := range won {
			mine[id] = true
		}
		var claimed []*store.Execution
		for _, x := range pending {
			if mine[x.ID] {
				claimed = append(claimed, x)
			}
		}
		if err := s.deliverAll(ctx, claimed, &res); err != nil {
			return res, err
		}
		if len(pending) < sweepBatch {
			return res, nil
		}
	}
}

// deliverAll delivers claimed alarms, parallel at a time, and counts the outcomes in res.
func (s *Sender) deliverAll(ctx context.Context, claimed []*store.Execution, res *Result) error {
	jobIDs := make([]int64, len(claimed))
	for i, x := range claimed {
		jobIDs[i] = x.JobID
	}
	js, err := s.cfg.Store.JobsGet(ctx, jobIDs)
	if err != nil {
		owed := map[store.AlarmState][]int64{}
		for _, x := range claimed {
			owed[store.AlarmPending] = append(owed[store.AlarmPending], x.ID)
		}
		s.recordOwed(ctx, owed) // the sweep cannot go on: the alarms go back to pending
		return fmt.Errorf("jobs of %d alarms: %w", len(claimed), err)
	}
	jobs := make(map[int64]*store.Job, len(js))
	for _, j := range js {
		jobs[j.ID] = j
	}
	var mu sync.Mutex
	owed := map[store.AlarmState][]int64{} // outcomes not written: stopped, or the database failed
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, x := range claimed {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			to := s.deliver(ctx, x, jobs[x.JobID])
			err := s.record(ctx, []int64{x.ID}, to)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				owed[to] = append(owed[to], x.ID)
			}
			switch to {
			case store.AlarmSent:
				res.Sent++
			case store.AlarmFailed:
				res.Failed++
			case store.AlarmNone:
				res.Dropped++
			}
		}()
	}
	wg.Wait()
	s.recordOwed(ctx, owed)
	return ctx.Err()
}

// recordOwed writes the outcomes a sweep could not record as they came, one statement per
// state, within recordTimeout of now whether or not the sweep was stopped: what was
// delivered must be recorded, and a stop must not wait for a database that does not answer.
func (s *Sender) recordOwed(ctx context.Context, owed map[store.AlarmState][]int64) {
	if len(owed) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	for to, ids := range owed {
		if err := s.record(ctx, ids, to); err != nil {
			s.log.Error("recording alarms; they are sent again after the resend delay", "executions", ids, "state", to, "err", err)
		}
	}
}

// record moves claimed alarms on from sending.
func (s *Sender) record(ctx context.Context, ids []int64, to store.AlarmState) error {
	_, err := s.cfg.Store.ExecutionsSetAlarm(ctx, ids, store.AlarmSending, to)
	return err
}

// deliver applies the job's alarm policy to x and tells every target of the job what it
// decided, and returns the outcome to record.
func (s *Sender) deliver(ctx context.Context, x *store.Execution, job *store.Job) store.AlarmState {
	if job == nil || len(job.AlarmTargets) == 0 {
		// The job was deleted, or its targets removed, since it failed: nobody to tell.
		return store.AlarmNone
	}
	d, err := s.decide(ctx, job, x)
	if err != nil {
		// Undecided, nobody was told: the alarm goes back to pending for the next sweep.
		s.log.Error("alarm policy: the job's alarm state could not be kept; trying again later", "execution", x.ID, "job", job.ID, "err", err)
		return store.AlarmPending
	}
	ev := eventOf(job, x)
	if pausedBy(job, x) {
		// The failure that paused its job: told once, as the pause, whatever the policy
		// decided (the policy still counted it). Its claim makes it once in the cluster.
		ev.Event, ev.Reason, ev.Failures = EventPaused, job.PauseNote, job.PauseAfterFailures
		return s.tell(ctx, job, ev)
	}
	if d == Quiet {
		s.log.Debug("alarm held back by the job's alarm policy", "execution", x.ID, "job", job.ID, "state", x.State)
		return store.AlarmNone
	}
	if d == Recover {
		ev.Event = EventRecovered
	}
	return s.tell(ctx, job, ev)
}

// pausedBy reports whether x is the failure that paused job by pause on failure: the engine
// pauses the job in the transaction that writes x's result, stamped with x's finish.
func pausedBy(job *store.Job, x *store.Execution) bool {
	return job.PausedBy == store.PausedByFailures && job.PausedAt == x.FinishedAt && x.State != store.ExecSucceeded
}

// tell delivers ev to every target of job and returns the outcome to record.
func (s *Sender) tell(ctx context.Context, job *store.Job, ev Event) store.AlarmState {
	told, failed := 0, 0
	for _, raw := range job.AlarmTargets {
		shown := MaskTarget(raw)
		plain, err := OpenTarget(s.cfg.Secrets, raw)
		var t Target
		if err == nil {
			t, err = ParseTarget(plain)
		}
		if err == nil && t.Masked {
			err = fmt.Errorf("%s: the target stored is a mask, not a target", shown)
		}
		if err == nil {
			err = s.attempt(ctx, t, ev)
		}
		switch {
		case err == nil:
			told++
			s.log.Info("alarm sent", "event", ev.Event, "execution", ev.ExecutionID, "job", job.ID, "target", shown)
		case ctx.Err() != nil && told == 0:
			// Stopped before anyone heard: the next leader sends it.
			return store.AlarmPending
		default:
			failed++
			s.log.Error("alarm not delivered", "event", ev.Event, "execution", ev.ExecutionID, "job", job.ID, "target", shown, "err", err)
		}
	}
	if failed > 0 {
		return store.AlarmFailed
	}
	return store.AlarmSent
}

// decide applies the job's alarm policy to x on the job's stored alarm state, with a
// compare-and-set, so two senders (leaders that overlap for a moment) or a sender after a
// restart count every execution once. The default policy needs no state: every final
// failure alarms.
func (s *Sender) decide(ctx context.Context, job *store.Job, x *store.Execution) (Decision, error) {
	failed := x.State != store.ExecSucceeded
	if job.AlarmPolicy.IsZero() {
		if failed {
			return Alert, nil
		}
		return Quiet, nil
	}
	at := x.FinishedAt
	if at == 0 {
		at = s.cfg.Clock.Now().UnixMilli()
	}
	for tries := 0; ; tries++ {
		st, err := s.cfg.Store.JobAlarmGet(ctx, job.ID)
		if err != nil {
			return "", err
		}
		if d, ok := decided(*st, x.ID); ok {
			return d, nil // delivered again after its node died: decided then
		}
		next, d := Step(job.AlarmPolicy, *st, x.ID, failed, at)
		err = s.cfg.Store.JobAlarmPut(ctx, &next)
		if errors.Is(err, store.ErrConflict) && tries < 20 {
			continue // another execution of the job was decided meanwhile: count on from it
		}
		if err != nil {
			return "", err
		}
		return d, nil
	}
}

// Raise tells the job's targets of reason now, whatever its alarm policy: for what is not
// a failed run but needs a person (a job that paused itself, say). executionID names the
// run that led to it, 0 for none. It delivers with the usual retries before it returns
// and is not kept for a later sweep, so the caller decides what a failure to tell means.
func (s *Sender) Raise(ctx context.Context, jobID, executionID int64, reason string) error {
	job, err := s.cfg.Store.JobGet(ctx, jobID)
	if err != nil {
		return fmt.Errorf("alarm: raise for job %d: %w", jobID, err)
	}
	if len(job.AlarmTargets) == 0 {
		return nil
	}
	ev := Event{Event: EventRaised, Reason: reason, JobID: job.ID, JobGroup: job.Group, JobName: job.Name, ExecutionID: executionID}
	switch s.tell(ctx, job, ev) {
	case store.AlarmSent:
		return nil
	case store.AlarmPending:
		return fmt.Errorf("alarm: raise for job %d: %w", jobID, ctx.Err())
	default:
		return fmt.Errorf("alarm: raise for job %d: not every target was told (the log says which)", jobID)
	}
}

// attempt delivers to one target, retrying with a doubling pause.
func (s *Sender) attempt(ctx context.Context, t Target, ev Event) error {
	tries := 0
	return backoff.Retry(ctx, s.cfg.Clock, backoff.Policy{Initial: s.cfg.Backoff}, s.cfg.Attempts, func(ctx context.Context) error {
		tries++
		actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		var err error
		switch t.Kind {
		case Email:
			err = sendMail(actx, s.cfg.SMTP, t.Address, ev, s.cfg.Clock.Now())
		case Webhook:
			err = postWebhook(actx, s.cfg.HTTPClient, t.Address, ev)
		default:
			if t.Kind == PagerDuty && s.cfg.PagerDutyURL != "" {
				t.Address = s.cfg.PagerDutyURL
			}
			err = postChannel(actx, s.cfg.HTTPClient, t, ev, s.cfg.Clock.Now())
		}
		if errors.Is(err, errPermanent) {
			return backoff.Permanent(err)
		}
		if err != nil {
			s.log.Warn("alarm delivery failed; retrying", "target", shownTarget(t), "execution", ev.ExecutionID, "attempt", tries, "err", err)
		}
		return err
	})
}

// shownTarget is a target for the log: a channel's kind and host, never its token.
func shownTarget(t Target) string {
	if IsChannel(t.Kind) {
		return string(t.Kind) + ":" + hostOf(t.Address)
	}
	return t.Address
}
