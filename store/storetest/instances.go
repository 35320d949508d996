package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// remoteJob stores a remote job of app "pool" and returns it with a maker of its running
// executions (fired at the given time).
func remoteJob(t *testing.T, s store.Store, name string) (*store.Job, func(at int64) *store.Execution) {
	job := newJob(t, s, "g", name)
	job.App, job.TargetKind = "pool", store.TargetRemote
	noErr(t, s.JobUpdate(context.Background(), job))
	return job, func(at int64) *store.Execution {
		return &store.Execution{JobID: job.ID, TriggerID: 7, ScheduledAt: at, FiredAt: at, Cause: store.CauseSchedule,
			Node: "n", State: store.ExecRunning}
	}
}

// testExecutorInstances covers what an executor's heartbeat is checked against: the running
// executions on an address with the instance each went to, losing some of them by id, and a
// result that arrives for a lost one.
func testExecutorInstances(t *testing.T, s store.Store) {
	ctx := context.Background()
	_, mk := remoteJob(t, s, "pool-job")
	a, b, c := mk(100), mk(200), mk(300)
	get(s.ExecutionsInsert(ctx, []*store.Execution{a, b, c})).ok(t)
	equal(t, "dispatch a", get(recordSend(ctx, s, store.OwnerOf(a), a.ID, "http://x:1", "old", 0, 1, "sent")).ok(t), true)
	equal(t, "dispatch b", get(recordSend(ctx, s, store.OwnerOf(b), b.ID, "http://x:1", "new", 0, 1, "sent")).ok(t), true)
	equal(t, "dispatch c", get(recordSend(ctx, s, store.OwnerOf(c), c.ID, "http://y:1", "", 0, 1, "sent")).ok(t), true)

	runs := get(s.ExecutionsRunningOnExecutor(ctx, "pool", "http://x:1")).ok(t)
	for i, r := range runs {
		if r.DispatchedAt == 0 {
			t.Errorf("run %d: no dispatch time", r.ID)
		}
		runs[i].DispatchedAt = 0 // the database's clock: compared above, not below
	}
	want := []store.ExecutorRun{{ID: a.ID, Instance: "old", FiredAt: 100}, {ID: b.ID, Instance: "new", FiredAt: 200}}
	if !slices.Equal(runs, want) {
		t.Fatalf("running on x:1 = %+v, want %+v", runs, want)
	}
	equal(t, "another app's", len(get(s.ExecutionsRunningOnExecutor(ctx, "other", "http://x:1")).ok(t)), 0)
	d := get(s.ExecutionDispatchedTo(ctx, b.ID)).ok(t)
	equal(t, "dispatched to", *d, store.Dispatched{ID: b.ID, App: "pool", Address: "http://x:1", Instance: "new", FiredAt: 200})
	if _, err := s.ExecutionDispatchedTo(ctx, c.ID+1000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("dispatch of an execution not created yet: err = %v, want ErrNotFound", err)
	}

	// Only the ids given that still run on the address are lost.
	// b was sent again since it was read (to the executor's new instance): judged on what
	// is no longer so, it is kept.
	read := get(s.ExecutionsRunningOnExecutor(ctx, "pool", "http://x:1")).ok(t)
	equal(t, "dispatch b again", get(recordSend(ctx, s, store.OwnerOf(b), b.ID, "http://x:1", "newer", 0, 1, "sent")).ok(t), true)
	lost := get(s.ExecutionsLoseOnExecutorIDs(ctx, "http://x:1", append(read, store.ExecutorRun{ID: c.ID}))).ok(t)
	sameIDs(t, "lost by id", ids(lost, executionID), []int64{a.ID})
	equal(t, "b sent again", get(s.ExecutionGet(ctx, b.ID)).ok(t).State, store.ExecRunning)
	equal(t, "lost state", lost[0].State, store.ExecLost)
	equal(t, "c elsewhere", get(s.ExecutionGet(ctx, c.ID)).ok(t).State, store.ExecRunning)
	if _, err := s.ExecutionDispatchedTo(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("dispatch of an ended execution: err = %v, want ErrNotFound", err)
	}
	equal(t, "lose again", len(get(s.ExecutionsLoseOnExecutorIDs(ctx, "http://x:1", read[:1])).ok(t)), 0)
	// The instance a lost run had been handed to stays with it, for its late result.
	equal(t, "lost to", *get(s.ExecutionLostTo(ctx, a.ID)).ok(t), store.Dispatched{ID: a.ID, App: "pool", Address: "http://x:1", Instance: "old", FiredAt: 100})
	if _, err := s.ExecutionLostTo(ctx, b.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lost-to of a running execution: err = %v, want ErrNotFound", err)
	}
	// Many at once: each in its own state, the others absent.
	running := get(s.ExecutionsDispatchedTo(ctx, []int64{a.ID, b.ID, c.ID, c.ID + 1000})).ok(t)
	equal(t, "running of many", len(running), 2)
	equal(t, "b running", *running[b.ID], store.Dispatched{ID: b.ID, App: "pool", Address: "http://x:1", Instance: "newer", FiredAt: 200})
	equal(t, "c running", running[c.ID] != nil, true)
	lostOf := get(s.ExecutionsLostTo(ctx, []int64{a.ID, b.ID, c.ID + 1000})).ok(t)
	equal(t, "lost of many", len(lostOf), 1)
	equal(t, "a lost", *lostOf[a.ID], store.Dispatched{ID: a.ID, App: "pool", Address: "http://x:1", Instance: "old", FiredAt: 100})
	equal(t, "none asked", len(get(s.ExecutionsDispatchedTo(ctx, nil)).ok(t)), 0)
	e := mk(400)
	get(s.ExecutionsInsert(ctx, []*store.Execution{e})).ok(t)
	equal(t, "dispatch e", get(recordSend(ctx, s, store.OwnerOf(e), e.ID, "http://z:1", "z1", 0, 1, "sent")).ok(t), true)
	sameIDs(t, "lost with its executor", ids(get(s.ExecutionsLoseOnExecutor(ctx, "pool", "http://z:1")).ok(t), executionID), []int64{e.ID})
	equal(t, "lost with its executor, to", get(s.ExecutionLostTo(ctx, e.ID)).ok(t).Instance, "z1")

	// A late result: the lost one takes it, a running or a late-completed one does not.
	late := []store.ExecutionResult{
		{ID: a.ID, State: store.ExecSucceeded, HandleCode: 200, HandleMsg: "ok (late)", StartedAt: 1732230000123, FinishedAt: 1732230001123},
		{ID: b.ID, State: store.ExecSucceeded, HandleCode: 200, HandleMsg: "ok", FinishedAt: 900},
	}
	sameIDs(t, "late", get(s.ExecutionsCompleteLate(ctx, late)).ok(t), []int64{a.ID})
	got := get(s.ExecutionGet(ctx, a.ID)).ok(t)
	if got.State != store.ExecSucceeded || got.HandleMsg != "ok (late)" || got.HandleCode != 200 || got.StartedAt != 1732230000123 || got.FinishedAt != 1732230001123 {
		t.Fatalf("late result recorded as %+v", got)
	}
	equal(t, "b still running", get(s.ExecutionGet(ctx, b.ID)).ok(t).State, store.ExecRunning)
	equal(t, "late twice", len(get(s.ExecutionsCompleteLate(ctx, late[:1])).ok(t)), 0)
}

func testKillRequests(t *testing.T, s store.Store) {
	ctx := context.Background()
	noErr(t, s.KillRequest(ctx, 5, "n1"))
	noErr(t, s.KillRequest(ctx, 5, "n1")) // twice: one request
	noErr(t, s.KillRequest(ctx, 3, "n1"))
	noErr(t, s.KillRequest(ctx, 4, "n2"))
	equal(t, "none for n3", len(get(s.KillRequestsTake(ctx, "n3")).ok(t)), 0)
	sameIDs(t, "n1 takes", get(s.KillRequestsTake(ctx, "n1")).ok(t), []int64{3, 5})
	equal(t, "taken once", len(get(s.KillRequestsTake(ctx, "n1")).ok(t)), 0)
	sameIDs(t, "n2 takes", get(s.KillRequestsTake(ctx, "n2")).ok(t), []int64{4})
}

// testAppCredentials: one credential per app, found by its hash; rotating replaces the hash,
// so the old one finds nothing.
func testAppCredentials(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := &store.AppCredential{App: "billing", Hash: "h1", CreatedAt: 10}
	noErr(t, s.AppCredentialCreate(ctx, a))
	if err := s.AppCredentialCreate(ctx, &store.AppCredential{App: "billing", Hash: "h9", CreatedAt: 11}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second credential of an app: err = %v, want ErrAlreadyExists", err)
	}
	if err := s.AppCredentialRotate(ctx, &store.AppCredential{App: "nobody", Hash: "h8", RotatedAt: 12}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rotating a credential never created: err = %v, want ErrNotFound", err)
	}
	noErr(t, s.AppCredentialCreate(ctx, &store.AppCredential{App: "payroll", Hash: "h2", CreatedAt: 20}))
	equal(t, "by hash", *get(s.AppCredentialByHash(ctx, "h2")).ok(t), store.AppCredential{App: "payroll", Hash: "h2", CreatedAt: 20})

	r := &store.AppCredential{App: "billing", Hash: "h3", RotatedAt: 30}
	noErr(t, s.AppCredentialRotate(ctx, r))
	equal(t, "rotated", *r, store.AppCredential{App: "billing", Hash: "h3", CreatedAt: 10, RotatedAt: 30})
	if _, err := s.AppCredentialByHash(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the rotated-out hash: err = %v, want ErrNotFound", err)
	}
	list := get(s.AppCredentialList(ctx)).ok(t)
	equal(t, "listed", len(list), 2)
	equal(t, "first listed", *list[0], *r)

	// Revoking one app's credential stops its secret and leaves the other app's; the app may
	// be given a new one after.
	noErr(t, s.AppCredentialCreate(ctx, &store.AppCredential{App: "ledger", Hash: "h5", CreatedAt: 40}))
	noErr(t, s.AppCredentialDelete(ctx, "ledger"))
	if _, err := s.AppCredentialByHash(ctx, "h5"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked credential's hash: err = %v, want ErrNotFound", err)
	}
	if err := s.AppCredentialDelete(ctx, "ledger"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking a credential twice: err = %v, want ErrNotFound", err)
	}
	equal(t, "listed after a revoke", len(get(s.AppCredentialList(ctx)).ok(t)), 2)
	noErr(t, s.AppCredentialCreate(ctx, &store.AppCredential{App: "ledger", Hash: "h6", CreatedAt: 50}))
	noErr(t, s.AppCredentialDelete(ctx, "ledger"))

	// Deleting an app revokes its credential and forgets its instances; another app's stay.
	noErr(t, s.AppPut(ctx, &store.App{Name: "payroll", AddressMode: store.AddressAuto}))
	for _, app := range []string{"payroll", "billing"} {
		noErr(t, s.RegistryBeat(ctx, app, "http://"+app+":1", "i-"+app, "", nil))
	}
	noErr(t, s.AppDelete(ctx, "payroll"))
	if _, err := s.AppCredentialByHash(ctx, "h2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the credential of a deleted app: err = %v, want ErrNotFound", err)
	}
	equal(t, "another app's credential", get(s.AppCredentialByHash(ctx, "h3")).ok(t).App, "billing")
	live := get(s.RegistryLive(ctx, "", time.Hour)).ok(t)
	equal(t, "instances left", len(live), 1)
	equal(t, "instance left", live[0].App, "billing")
	// An app of only a credential or only instances is deleted too; one of nothing is not found.
	noErr(t, s.AppDelete(ctx, "billing"))
	equal(t, "instances after", len(get(s.RegistryLive(ctx, "", time.Hour)).ok(t)), 0)
	if err := s.AppDelete(ctx, "billing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting an app of nothing: err = %v, want ErrNotFound", err)
	}
}

// testClusterKeys: generations are listed newest first; two nodes creating the same
// generation at once store one, and the other learns ErrAlreadyExists.
func testClusterKeys(t *testing.T, s store.Store) {
	ctx := context.Background()
	equal(t, "no key yet", len(get(s.ClusterKeys(ctx)).ok(t)), 0)
	first := store.ClusterKey{Generation: 1, PublicKey: "ed25519:p1", PrivateKey: "ed25519:s1", CreatedAt: 10}
	errs := make(chan error, 2)
	for _, k := range []store.ClusterKey{first, {Generation: 1, PublicKey: "ed25519:p9", PrivateKey: "ed25519:s9", CreatedAt: 11}} {
		go func() { errs <- s.ClusterKeyCreate(ctx, &k) }()
	}
	var exists int
	for range 2 {
		if err := <-errs; errors.Is(err, store.ErrAlreadyExists) {
			exists++
		} else {
			noErr(t, err)
		}
	}
	equal(t, "losers of the race to create generation 1", exists, 1)
	noErr(t, s.ClusterKeyCreate(ctx, &store.ClusterKey{Generation: 2, PublicKey: "ed25519:p2", PrivateKey: "ed25519:s2", CreatedAt: 20}))
	keys := get(s.ClusterKeys(ctx)).ok(t)
	equal(t, "generations", len(keys), 2)
	equal(t, "newest first", *keys[0], store.ClusterKey{Generation: 2, PublicKey: "ed25519:p2", PrivateKey: "ed25519:s2", CreatedAt: 20})
	equal(t, "generation 1", keys[1].Generation, int64(1))
}

// testRunOutlivesItsJob: a remote run keeps the app it was handed to when its job is
// deleted, so what its executor reports is still checked and kept; a result records how
// many output lines the executor could not deliver.
func testRunOutlivesItsJob(t *testing.T, s store.Store) {
	ctx := context.Background()
	job, mk := remoteJob(t, s, "doomed")
	a, b := mk(100), mk(200)
	get(s.ExecutionsInsert(ctx, []*store.Execution{a, b})).ok(t)
	equal(t, "dispatch a", get(recordSend(ctx, s, store.OwnerOf(a), a.ID, "http://x:1", "i1", 0, 1, "sent")).ok(t), true)
	equal(t, "dispatch b", get(recordSend(ctx, s, store.OwnerOf(b), b.ID, "http://y:1", "i2", 0, 1, "sent")).ok(t), true)
	noErr(t, s.JobDelete(ctx, job.ID))

	equal(t, "dispatched to, job deleted", *get(s.ExecutionDispatchedTo(ctx, a.ID)).ok(t),
		store.Dispatched{ID: a.ID, App: "pool", Address: "http://x:1", Instance: "i1", FiredAt: 100})
	equal(t, "running on x:1", len(get(s.ExecutionsRunningOnExecutor(ctx, "pool", "http://x:1")).ok(t)), 1)
	equal(t, "per executor", get(s.ExecutionsRunningByExecutor(ctx, "pool")).ok(t)[store.ExecutorKey{App: "pool", Address: "http://y:1"}], 1)
	sameIDs(t, "lost with its executor", ids(get(s.ExecutionsLoseOnExecutor(ctx, "pool", "http://y:1")).ok(t), executionID), []int64{b.ID})
	equal(t, "lost to", get(s.ExecutionLostTo(ctx, b.ID)).ok(t).App, "pool")

	done := get(s.ExecutionsComplete(ctx, []store.ExecutionResult{{ID: a.ID, State: store.ExecSucceeded, HandleCode: 200,
		FinishedAt: 300, OutputLost: 3}})).ok(t)
	sameIDs(t, "completed", done, []int64{a.ID})
	got := get(s.ExecutionGet(ctx, a.ID)).ok(t)
	equal(t, "output lost", got.OutputLost, int64(3))
	equal(t, "executor app", got.ExecutorApp, "pool")
	sameIDs(t, "late", get(s.ExecutionsCompleteLate(ctx, []store.ExecutionResult{{ID: b.ID, State: store.ExecFailed,
		HandleCode: 500, FinishedAt: 400, OutputLost: 2}})).ok(t), []int64{b.ID})
	equal(t, "late output lost", get(s.ExecutionGet(ctx, b.ID)).ok(t).OutputLost, int64(2))
}
