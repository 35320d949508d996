package main

import (
	"strings"
	"testing"
)

// TestCLINodeListSaysHealthAndWhoAnswered: node list shows each node's role and health in
// their own columns, and which node answered in a line of its own (its ANSWERED column read
// as health).
func TestCLINodeListSaysHealthAndWhoAnswered(t *testing.T) {
	s := startAPIServer(t)
	out := s.mustCLI(t, "node", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID NAME ROLE HEALTH LAST-SEEN STARTED" {
		t.Fatalf("node list:\n%s", out)
	}
	row := strings.Fields(lines[1])
	if len(row) < 4 || row[2] != "leader" && row[2] != "member" || row[3] != "live" {
		t.Errorf("node row %q: want a role and live", lines[1])
	}
	if lines[2] != "Answered by node "+row[0]+"." {
		t.Errorf("last line %q, want the node that answered", lines[2])
	}
}
