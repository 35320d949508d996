package main

import (
	"testing"

	"github.com/sundial-scheduler/sundial/executor/wire"
)

// A shell run learns its data interval, backfill and zone from SUNDIAL_INTERVAL_START,
// SUNDIAL_INTERVAL_END (RFC 3339 in UTC), SUNDIAL_BACKFILL_ID and SUNDIAL_FIRE_ZONE; a run no
// schedule made has none of them.
func TestExecutorCmdShellDataInterval(t *testing.T) {
	peer, addr := startExecutorCmd(t, true)
	script := `echo "start=${SUNDIAL_INTERVAL_START-unset} end=${SUNDIAL_INTERVAL_END-unset} backfill=${SUNDIAL_BACKFILL_ID-unset} zone=${SUNDIAL_FIRE_ZONE-unset}"`
	res := runOn(t, peer, addr, wire.RunRequest{ExecutionID: 1, JobID: 1, Handler: "shell", TriggerID: 5,
		ScheduledAt: 1772337600000, IntervalStart: 1772323200000, IntervalEnd: 1772337600000, BackfillID: 9, FireZone: "Europe/London", Params: script})
	if res.State != wire.StateSucceeded {
		t.Fatalf("script: %+v", res)
	}
	if out, want := peer.Output(1), "start=2026-03-01T00:00:00.000Z end=2026-03-01T04:00:00.000Z backfill=9 zone=Europe/London\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	runOn(t, peer, addr, wire.RunRequest{ExecutionID: 2, JobID: 1, Handler: "shell", ScheduledAt: 1772330400000, Params: script})
	if out, want := peer.Output(2), "start=unset end=unset backfill=unset zone=unset\n"; out != want {
		t.Errorf("a run-now's output %q, want %q", out, want)
	}
}
