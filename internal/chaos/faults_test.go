package chaos

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestFaultNotTakenFailsTheRun: a freeze of a node that is not running does not happen. The
// fault is recorded with its reason, and the run fails though no fire went wrong; a run whose
// faults all took effect does not.
func TestFaultNotTakenFailsTheRun(t *testing.T) {
	c := &cluster{o: Options{Heartbeat: time.Second, Log: io.Discard}, start: time.Now(),
		nodes: []*process{{label: "node1", nodeID: "n1", life: &Proc{}}}}
	c.freezeNode(0, time.Hour) // returns at once: nothing to freeze
	if len(c.faults) != 1 || c.faults[0].Err == "" {
		t.Fatalf("faults %+v, want the freeze recorded as not taken", c.faults)
	}
	failed := Check(Input{Faults: c.faults}).Failed()
	if len(failed) != 1 || !strings.Contains(failed[0], "SIGSTOP node1") || !strings.Contains(failed[0], "did not take effect") {
		t.Fatalf("Failed() = %q, want the freeze that did not happen", failed)
	}
	if failed := Check(Input{Faults: []Fault{{What: "SIGKILL node1"}}}).Failed(); len(failed) != 0 {
		t.Errorf("Failed() = %q for a fault that took effect", failed)
	}
}
