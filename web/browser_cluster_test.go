package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// The dashboard's cluster panel names each node by its --node-id: two nodes on one host
// showed the host name twice. The host follows when it differs; a silent node says so.
func TestBrowserClusterPanelShowsNodeIDs(t *testing.T) {
	h := browserHarness(t)
	ctx := context.Background()
	self := h.srv.Scheduler().Engine().NodeID()
	for _, mode := range []struct {
		name  string
		width int
		dark  bool
	}{{"desktop-light", 1280, false}, {"phone-dark", 375, true}} {
		t.Run(mode.name, func(t *testing.T) {
			b := newBrowser(t, h, mode.width, 900)
			if mode.dark {
				b.preferDark()
			}
			// A node of its own per page view, just before it: the leader drops a node silent
			// for a node timeout (6 s here).
			other := "node-" + mode.name
			if _, err := h.st.NodeRegister(ctx, store.Owner{Node: other, Incarnation: "b1"}, "vm"); err != nil {
				t.Fatal(err)
			}
			b.login()
			panel := b.text("#cluster-title + .table-wrap")
			if !strings.Contains(panel, other+" on vm") || !strings.Contains(panel, self) {
				t.Errorf("cluster panel %q: want %s on vm and %s", panel, other, self)
			}
			b.screenshot("dashboard-cluster-" + mode.name)
		})
	}
}
