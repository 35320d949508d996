package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

func testApps(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, err := s.AppGet(ctx, "billing")
	wantErr(t, err, store.ErrNotFound)

	a := &store.App{Name: "billing", Title: "Billing"}
	noErr(t, s.AppPut(ctx, a))
	if a.AddressMode != store.AddressAuto || a.Protocol != store.ProtocolSundial || a.CreatedAt == 0 {
		t.Fatalf("defaults after AppPut: %+v", a)
	}
	created := a.CreatedAt
	m := &store.App{Name: "billing", Title: "Billing 2", AddressMode: store.AddressManual,
		Addresses: []string{"http://b:1", "http://a:1"}}
	noErr(t, s.AppPut(ctx, m))
	got := get(s.AppGet(ctx, "billing")).ok(t)
	equal(t, "title", got.Title, "Billing 2")
	equal(t, "mode", got.AddressMode, store.AddressManual)
	equal(t, "addresses", fmt.Sprint(got.Addresses), "[http://b:1 http://a:1]")
	equal(t, "created at survives a replacement", got.CreatedAt, created)

	// An xxl-job app keeps its generation and its token's hash and sealed form.
	x := &store.App{Name: "legacy", Protocol: store.ProtocolXXLJob, ProtocolVersion: "3.5", XXLTokenHash: "ab12", XXLTokenSealed: "v1:sealed"}
	noErr(t, s.AppPut(ctx, x))
	gx := get(s.AppGet(ctx, "legacy")).ok(t)
	if gx.Protocol != store.ProtocolXXLJob || gx.ProtocolVersion != "3.5" || gx.XXLTokenHash != "ab12" || gx.XXLTokenSealed != "v1:sealed" {
		t.Fatalf("xxl-job app read back as %+v", gx)
	}
	// An access token belongs to one app (apps_xxl_token_key): another app's, new or
	// replaced, is refused naming the field, and neither app changes.
	for _, name := range []string{"copycat", "billing"} {
		dup := &store.App{Name: name, Protocol: store.ProtocolXXLJob, ProtocolVersion: "3.5", XXLTokenHash: "ab12", XXLTokenSealed: "v1:copy"}
		wantTaken(t, s.AppPut(ctx, dup), "xxl_access_token")
	}
	wantErr(t, get(s.AppGet(ctx, "copycat")).err, store.ErrNotFound)
	equal(t, "the holder's sealed token", get(s.AppGet(ctx, "legacy")).ok(t).XXLTokenSealed, "v1:sealed")
	equal(t, "the other app kept its title", get(s.AppGet(ctx, "billing")).ok(t).Title, "Billing 2")
	noErr(t, s.AppPut(ctx, x)) // the holder itself, again
	noErr(t, s.AppDelete(ctx, "legacy"))
	// Two apps racing for one token: exactly one wins.
	won := race(t, func(i int) error {
		return s.AppPut(ctx, &store.App{Name: fmt.Sprintf("racer%d", i), Protocol: store.ProtocolXXLJob, ProtocolVersion: "3.5",
			XXLTokenHash: "cd34", XXLTokenSealed: "v1:race"})
	}, "xxl_access_token")
	noErr(t, s.AppDelete(ctx, fmt.Sprintf("racer%d", won)))

	noErr(t, s.AppPut(ctx, &store.App{Name: "arch"}))
	list := get(s.AppList(ctx)).ok(t)
	if len(list) != 2 || list[0].Name != "arch" || list[1].Name != "billing" {
		t.Fatalf("AppList = %v, want arch, billing", list)
	}
	noErr(t, s.AppDelete(ctx, "arch"))
	wantErr(t, s.AppDelete(ctx, "arch"), store.ErrNotFound)
	equal(t, "apps left", len(get(s.AppList(ctx)).ok(t)), 1)
}

func instanceAddrs(ins []*store.Instance) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.App + "@" + in.Address
	}
	return out
}

func testRegistry(t *testing.T, s store.Store) {
	ctx := context.Background()
	before := get(s.DBNow(ctx)).ok(t)
	noErr(t, s.RegistryBeat(ctx, "billing", "http://b:1", "i1", "v1.0.0", []string{"report"}))
	noErr(t, s.RegistryBeat(ctx, "billing", "http://a:1", "", "", nil))
	noErr(t, s.RegistryBeat(ctx, "other", "http://c:1", "", "", nil))
	// A beat replaces the handlers and keeps one row.
	noErr(t, s.RegistryBeat(ctx, "billing", "http://b:1", "i2", "v1.1.0", []string{"report", "http"}))

	live := get(s.RegistryLive(ctx, "billing", time.Minute)).ok(t)
	equal(t, "live billing", fmt.Sprint(instanceAddrs(live)), "[billing@http://a:1 billing@http://b:1]")
	equal(t, "handlers", fmt.Sprint(live[1].Handlers), "[report http]")
	equal(t, "a beat replaces the instance", live[1].Instance, "i2")
	equal(t, "a beat replaces the version", live[1].Version, "v1.1.0")
	equal(t, "no version reported", live[0].Version, "")
	if live[1].LastSeen < before-1000 || live[1].RegisteredAt > live[1].LastSeen {
		t.Fatalf("instance times from the database clock: %+v (db now %d)", live[1], before)
	}
	equal(t, "every app", len(get(s.RegistryLive(ctx, "", time.Minute)).ok(t)), 3)
	// An address belongs to one app (registry_address_key): another app's beat there is
	// refused naming the field and the holder, and changes nothing.
	wantTaken(t, s.RegistryBeat(ctx, "squatter", "http://b:1", "i9", "", nil), "address")
	wantTaken(t, s.RegistryBeatFor(ctx, "squatter", "http://b:1", "", nil, time.Hour), "address")
	at := get(s.RegistryAt(ctx, "http://b:1", time.Minute)).ok(t)
	equal(t, "at an address", fmt.Sprint(instanceAddrs(at)), "[billing@http://b:1]")
	equal(t, "the holder's instance kept", at[0].Instance, "i2")
	equal(t, "at no executor's address", len(get(s.RegistryAt(ctx, "http://nobody:1", time.Minute)).ok(t)), 0)
	equal(t, "squatter has nothing to leave", get(s.RegistryLeave(ctx, "squatter", "http://b:1")).ok(t), false)
	// Two apps racing for a new address: exactly one wins; the winner beats again.
	won := race(t, func(i int) error {
		return s.RegistryBeat(ctx, fmt.Sprintf("racer%d", i), "http://race:1", "i", "", nil)
	}, "address")
	noErr(t, s.RegistryBeat(ctx, fmt.Sprintf("racer%d", won), "http://race:1", "i", "", nil))
	equal(t, "the winner leaves", get(s.RegistryLeave(ctx, fmt.Sprintf("racer%d", won), "http://race:1")).ok(t), true)

	// Beats of one app's instance at one address racing (a stream's beats queued while the
	// database was busy, then taken at once): every one is taken, for a new address's row
	// and for one that is there.
	for range 2 {
		errs := together(16, func(int) error {
			return s.RegistryBeat(ctx, "billing", "http://beats:1", "i", "", []string{"report"})
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("racing beat %d of one instance: %v, want every one taken", i, err)
			}
		}
	}
	equal(t, "the racing beats' one row", get(s.RegistryLeave(ctx, "billing", "http://beats:1")).ok(t), true)

	equal(t, "leave", get(s.RegistryLeave(ctx, "other", "http://c:1")).ok(t), true)
	equal(t, "leave twice", get(s.RegistryLeave(ctx, "other", "http://c:1")).ok(t), false)

	// x:1 beats at its own pace (XXL-JOB's 30 s): silent past the caller's threshold, it is
	// live and stays through the sweep while within its own.
	noErr(t, s.RegistryBeatFor(ctx, "slow", "http://x:1", "", nil, time.Hour))

	// a:1 goes silent; b:1 keeps beating. The sweep takes a:1 only.
	took := live[1].RegisteredAt
	time.Sleep(1200 * time.Millisecond)
	noErr(t, s.RegistryBeat(ctx, "billing", "http://b:1", "i2", "v1.1.0", []string{"report"}))
	b1 := func() *store.Instance {
		for _, in := range get(s.RegistryLive(ctx, "billing", time.Minute)).ok(t) {
			if in.Address == "http://b:1" {
				return in
			}
		}
		t.Fatal("b:1 is not live")
		return nil
	}
	equal(t, "registered_at kept by the same instance's beat", b1().RegisteredAt, took)
	// A new process at the address (a restarted executor) took it now: registered_at says so.
	noErr(t, s.RegistryBeat(ctx, "billing", "http://b:1", "i3", "v1.1.0", []string{"report"}))
	if got := b1(); got.Instance != "i3" || got.RegisteredAt < took+1000 || got.RegisteredAt > got.LastSeen {
		t.Fatalf("after a new instance's beat: %+v, want registered_at restarted (was %d)", got, took)
	}
	equal(t, "live after a silence", fmt.Sprint(instanceAddrs(get(s.RegistryLive(ctx, "billing", 600*time.Millisecond)).ok(t))),
		"[billing@http://b:1]")
	// A sweep that judges only the instances seen since a moment (a leader's view after an
	// outage of the database) leaves those silent since before it.
	var aSeen int64
	for _, in := range get(s.RegistryLive(ctx, "billing", time.Hour)).ok(t) {
		if in.Address == "http://a:1" {
			aSeen = in.LastSeen
		}
	}
	if aSeen == 0 {
		t.Fatal("a:1 is not registered before the sweep")
	}
	equal(t, "silent since before the moment", len(get(s.RegistrySweep(ctx, 600*time.Millisecond, aSeen+1)).ok(t)), 0)
	gone := get(s.RegistrySweep(ctx, 600*time.Millisecond, aSeen)).ok(t)
	equal(t, "swept", fmt.Sprint(instanceAddrs(gone)), "[billing@http://a:1]")
	equal(t, "swept again", len(get(s.RegistrySweep(ctx, 600*time.Millisecond, 0)).ok(t)), 0)
	// Once its holder is swept (its runs declared lost), another app may take the address.
	noErr(t, s.RegistryBeat(ctx, "other", "http://a:1", "", "", nil))
	equal(t, "taken after the sweep", get(s.RegistryLeave(ctx, "other", "http://a:1")).ok(t), true)
	equal(t, "left after the sweep", fmt.Sprint(instanceAddrs(get(s.RegistryLive(ctx, "", time.Hour)).ok(t))), "[billing@http://b:1 slow@http://x:1]")
	slow := get(s.RegistryLive(ctx, "slow", 600*time.Millisecond)).ok(t)
	if len(slow) != 1 || slow[0].LiveFor != time.Hour {
		t.Fatalf("an instance with its own threshold: live %v, want x:1 with LiveFor 1h", slow)
	}
	noErr(t, s.RegistryBeatFor(ctx, "slow", "http://x:1", "", nil, 0))
	equal(t, "back to the caller's threshold", len(get(s.RegistryLive(ctx, "slow", time.Hour)).ok(t)), 1)
	time.Sleep(700 * time.Millisecond)
	equal(t, "silent past the caller's threshold again", len(get(s.RegistryLive(ctx, "slow", 600*time.Millisecond)).ok(t)), 0)

	// RegistryTouch keeps alive the rows of the very instances it names (app, address and
	// instance), in statements of a bounded size, and inserts none.
	noErr(t, s.RegistryBeat(ctx, "touch", "stream://t1", "t1", "", nil))
	noErr(t, s.RegistryBeat(ctx, "touch", "stream://t2", "t2", "", nil))
	time.Sleep(700 * time.Millisecond)
	var keys []store.InstanceKey
	for i := range 450 {
		keys = append(keys, store.InstanceKey{App: "touch", Address: fmt.Sprintf("stream://n%d", i), Instance: fmt.Sprintf("n%d", i)})
	}
	keys = append(keys, store.InstanceKey{App: "touch", Address: "stream://t2", Instance: "restarted"},
		store.InstanceKey{App: "other", Address: "stream://t1", Instance: "t1"}, store.InstanceKey{App: "touch", Address: "stream://t1", Instance: "t1"})
	equal(t, "touched", get(s.RegistryTouch(ctx, keys)).ok(t), int64(1))
	equal(t, "live after the touch", fmt.Sprint(instanceAddrs(get(s.RegistryLive(ctx, "touch", 600*time.Millisecond)).ok(t))), "[touch@stream://t1]")
	equal(t, "rows after the touch", fmt.Sprint(instanceAddrs(get(s.RegistryLive(ctx, "touch", time.Hour)).ok(t))), "[touch@stream://t1 touch@stream://t2]")
	equal(t, "nothing to touch", get(s.RegistryTouch(ctx, nil)).ok(t), int64(0))
	for _, a := range []string{"stream://t1", "stream://t2"} {
		equal(t, "leave "+a, get(s.RegistryLeave(ctx, "touch", a)).ok(t), true)
	}
}

func testExecutorExecutions(t *testing.T, s store.Store) {
	ctx := context.Background()
	billing := newJob(t, s, "g", "billing-job")
	billing.App, billing.TargetKind = "billing", store.TargetRemote
	noErr(t, s.JobUpdate(ctx, billing))
	other := newJob(t, s, "g", "other-job")
	other.App, other.TargetKind = "other", store.TargetRemote
	noErr(t, s.JobUpdate(ctx, other))

	mk := func(job int64, shard int, state store.ExecutionState) *store.Execution {
		return &store.Execution{JobID: job, TriggerID: 9, ScheduledAt: 100, Cause: store.CauseSchedule, Node: "n",
			State: state, ShardIndex: shard, ShardTotal: 2}
	}
	// The shards of one fire share trigger, scheduled time and attempt; each exists once.
	s0, s1 := mk(billing.ID, 0, store.ExecRunning), mk(billing.ID, 1, store.ExecRunning)
	equal(t, "shard dups", len(get(s.ExecutionsInsert(ctx, []*store.Execution{s0, s1})).ok(t)), 0)
	dups := get(s.ExecutionsInsert(ctx, []*store.Execution{mk(billing.ID, 1, store.ExecRunning)})).ok(t)
	equal(t, "a shard inserted twice", len(dups), 1)

	done := mk(billing.ID, 0, store.ExecSucceeded)
	done.ScheduledAt = 200
	otherRun := mk(other.ID, 0, store.ExecRunning)
	otherRun.ScheduledAt = 300
	get(s.ExecutionsInsert(ctx, []*store.Execution{done, otherRun})).ok(t)

	for _, x := range []*store.Execution{s0, s1, otherRun} {
		equal(t, "set dispatch", get(recordSend(ctx, s, store.OwnerOf(x), x.ID, "http://a:1", "i1", x.ShardIndex, 2, "sent")).ok(t), true)
	}
	equal(t, "set dispatch of a finished one", get(recordSend(ctx, s, store.OwnerOf(done), done.ID, "http://a:1", "i1", 0, 1, "x")).ok(t), false)
	// Running per executor: both shards at a:1 for billing; other's run is other's.
	running := get(s.ExecutionsRunningByExecutor(ctx, "")).ok(t)
	equal(t, "running per executor", fmt.Sprint(running),
		fmt.Sprint(map[store.ExecutorKey]int{{App: "billing", Address: "http://a:1"}: 2, {App: "other", Address: "http://a:1"}: 1}))
	equal(t, "running on billing's executors", fmt.Sprint(get(s.ExecutionsRunningByExecutor(ctx, "billing")).ok(t)),
		fmt.Sprint(map[store.ExecutorKey]int{{App: "billing", Address: "http://a:1"}: 2}))
	got := get(s.ExecutionGet(ctx, s1.ID)).ok(t)
	if got.ExecutorAddress != "http://a:1" || got.ShardIndex != 1 || got.ShardTotal != 2 || got.TriggerMsg != "sent" {
		t.Fatalf("dispatch not recorded: %+v", got)
	}

	before := get(s.DBNow(ctx)).ok(t)
	lost := get(s.ExecutionsLoseOnExecutor(ctx, "billing", "http://a:1")).ok(t)
	sameIDs(t, "lost", ids(lost, executionID), []int64{s0.ID, s1.ID})
	if lost[0].State != store.ExecLost || lost[0].FinishedAt < before-1000 {
		t.Fatalf("lost execution: %+v", lost[0])
	}
	equal(t, "other app untouched", get(s.ExecutionGet(ctx, otherRun.ID)).ok(t).State, store.ExecRunning)
	equal(t, "terminal untouched", get(s.ExecutionGet(ctx, done.ID)).ok(t).State, store.ExecSucceeded)
	equal(t, "lose twice", len(get(s.ExecutionsLoseOnExecutor(ctx, "billing", "http://a:1")).ok(t)), 0)
	// A result that arrives after the loss changes nothing.
	won := get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: s0.ID, State: store.ExecSucceeded, FinishedAt: 1}})).ok(t)
	if slices.Contains(won, s0.ID) {
		t.Fatal("a lost execution was completed")
	}
}

// wantTaken fails unless err is the store's *ExistsError naming field.
func wantTaken(t *testing.T, err error, field string) {
	t.Helper()
	var taken *store.ExistsError
	if !errors.As(err, &taken) || taken.Field != field || !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("got %v, want an ErrAlreadyExists naming %s", err, field)
	}
}

// race runs try(0) and try(1) at once, released together, and returns which one won: exactly
// one must, the other failing as wantTaken(field).
func race(t *testing.T, try func(i int) error, field string) int {
	t.Helper()
	errs := together(2, try)
	switch {
	case errs[0] == nil && errs[1] != nil:
		wantTaken(t, errs[1], field)
		return 0
	case errs[1] == nil && errs[0] != nil:
		wantTaken(t, errs[0], field)
		return 1
	}
	t.Fatalf("two racing writes of one %s: errors %v, want exactly one to win", field, errs)
	return -1
}

// together runs try(0) … try(n-1) at once, released together, and returns their errors.
func together(n int, try func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = try(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}
