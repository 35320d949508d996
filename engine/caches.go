package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/store"
)

// buildTrigger rebuilds the schedule.Trigger a stored trigger row describes, with its
// calendar chain.
func (e *Engine) buildTrigger(ctx context.Context, ex store.Querier, row *store.Trigger) (*schedule.Trigger, schedule.Calendar, error) {
	loc, err := loadZoneCached(row.TimeZone)
	if err != nil {
		return nil, nil, err
	}
	sched, err := decodeSpecCached(schedule.Kind(row.Kind), row.Spec, loc)
	if err != nil {
		return nil, nil, err
	}
	policy, err := schedule.ParseMisfirePolicy(row.MisfirePolicy)
	if err != nil {
		return nil, nil, err
	}
	dst, err := schedule.ParseDSTPolicy(row.DSTPolicy)
	if err != nil {
		return nil, nil, err
	}
	if sched, err = schedule.WithDST(sched, dst); err != nil {
		return nil, nil, err
	}
	tr := &schedule.Trigger{
		Schedule: sched, Start: fromMillis(row.StartAt), End: fromMillis(row.EndAt), Misfire: policy,
		Next: fromMillis(row.NextFireAt), Prev: fromMillis(row.PrevFireAt), TimesTriggered: int(row.TimesFired),
	}
	var cal schedule.Calendar
	if row.CalendarName != "" {
		if cal, err = e.cals.get(ctx, ex, row.CalendarName, loc); err != nil {
			return nil, nil, err
		}
	}
	return tr, cal, nil
}

// specKey identifies a decoded schedule. Schedules are immutable values (a misfire that
// rewrites one replaces it), so triggers with the same spec share one.
type specKey struct {
	kind schedule.Kind
	spec string
	loc  *time.Location
}

// specCache spares the acquisition loop a JSON decode per trigger and round. Triggers that
// share a schedule share one entry; when there are more distinct schedules than specCacheMax
// the cache starts over, which bounds its memory whatever the number of triggers.
var specCache = struct {
	sync.Mutex
	m map[specKey]schedule.Schedule
}{m: map[specKey]schedule.Schedule{}}

const specCacheMax = 100_000

func decodeSpecCached(kind schedule.Kind, spec string, loc *time.Location) (schedule.Schedule, error) {
	k := specKey{kind, spec, loc}
	specCache.Lock()
	s, ok := specCache.m[k]
	specCache.Unlock()
	if ok {
		return s, nil
	}
	s, err := schedule.DecodeSpec(kind, spec, loc)
	if err != nil {
		return nil, err
	}
	specCache.Lock()
	if len(specCache.m) >= specCacheMax {
		clear(specCache.m)
	}
	specCache.m[k] = s
	specCache.Unlock()
	return s, nil
}

var zoneCache sync.Map // zone name → *time.Location

func loadZoneCached(name string) (*time.Location, error) {
	if name == "" {
		name = "UTC"
	}
	if loc, ok := zoneCache.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := schedule.LoadZone(name)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(name, loc)
	return loc, nil
}

// calendarCache keeps built calendar chains. A calendar is reread when its row changed, which
// costs one lookup per chain link and acquisition round that uses it.
type calendarCache struct {
	store store.Store
	mu    sync.Mutex
	built map[calKey]cachedCalendar
}

type calKey struct {
	name string
	loc  *time.Location
}

type cachedCalendar struct {
	updatedAt int64
	cal       schedule.Calendar
}

func newCalendarCache(s store.Store) *calendarCache {
	return &calendarCache{store: s, built: map[calKey]cachedCalendar{}}
}

// get returns the named calendar chain for a trigger in loc (see schedule.BuildCalendarChain
// for the zone each link is read in).
func (c *calendarCache) get(ctx context.Context, ex store.Querier, name string, loc *time.Location) (schedule.Calendar, error) {
	var links []schedule.CalendarLink
	var stamp int64
	for n, depth := name, 0; n != ""; depth++ {
		if depth > 16 {
			return nil, fmt.Errorf("calendar %q: base chain deeper than 16 (a cycle?)", name)
		}
		row, err := ex.CalendarGet(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("calendar %q: %w", n, err)
		}
		links = append(links, schedule.CalendarLink{Spec: row.Spec, Zone: row.Zone})
		stamp = max(stamp, row.UpdatedAt)
		n = row.Base
	}
	key := calKey{name, loc}
	c.mu.Lock()
	cached, ok := c.built[key]
	c.mu.Unlock()
	if ok && cached.updatedAt == stamp {
		return cached.cal, nil
	}
	cal, err := schedule.BuildCalendarChain(links, loc)
	if err != nil {
		return nil, fmt.Errorf("calendar %q: %w", name, err)
	}
	c.mu.Lock()
	c.built[key] = cachedCalendar{updatedAt: stamp, cal: cal}
	c.mu.Unlock()
	return cal, nil
}

// jobCache keeps jobs for a short time: firing needs the job of every fire, and rereading it
// per fire would cost a round trip each. An edit reaches the fires within jobCacheTTL.
type jobCache struct {
	store store.Store
	clock clock.Clock
	mu    sync.Mutex
	jobs  map[int64]cachedJob
}

const jobCacheTTL = time.Second

type cachedJob struct {
	job    *store.Job
	loaded time.Time
}

func newJobCache(s store.Store, c clock.Clock) *jobCache {
	return &jobCache{store: s, clock: c, jobs: map[int64]cachedJob{}}
}

// getMany returns the jobs of ids that exist, reading those not cached in one statement: a
// batch of fires of many jobs costs one round trip, not one per job.
func (c *jobCache) getMany(ctx context.Context, ids []int64) (map[int64]*store.Job, error) {
	now := c.clock.Now()
	out := make(map[int64]*store.Job, len(ids))
	var missing []int64
	c.mu.Lock()
	for _, id := range ids {
		if cj, ok := c.jobs[id]; ok && now.Sub(cj.loaded) < jobCacheTTL {
			out[id] = cj.job
		} else if _, seen := out[id]; !seen {
			missing = append(missing, id)
			out[id] = nil
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	jobs, err := c.store.JobsGet(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("jobs %v: %w", missing, err)
	}
	c.mu.Lock()
	for _, j := range jobs {
		c.jobs[j.ID] = cachedJob{job: j, loaded: now}
		out[j.ID] = j
	}
	c.mu.Unlock()
	return out, nil
}

// forget drops a job so the next fire rereads it (after this node changed its data).
func (c *jobCache) forget(id int64) {
	c.mu.Lock()
	delete(c.jobs, id)
	c.mu.Unlock()
}

// Calendar returns the named stored calendar chain evaluated in loc, read through ex.
func (e *Engine) Calendar(ctx context.Context, ex store.Querier, name string, loc *time.Location) (schedule.Calendar, error) {
	return e.cals.get(ctx, ex, name, loc)
}
