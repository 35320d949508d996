package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Entry is one line of the ledger: a handler began (Ev "begin") or ended (Ev "end") one run.
// The ledger lives outside the database, so what it says happened did happen, whatever the
// database says.
type Entry struct {
	Ev      string `json:"ev"`
	JobID   int64  `json:"job"`
	Sched   int64  `json:"sched"` // scheduled time, Unix ms
	Attempt int    `json:"attempt"`
	Shard   int    `json:"shard"`
	ExecID  int64  `json:"exec"`
	// Proc names the process: its role and index, its node id (nodes) and its pid, e.g.
	// "node1:n1:4242" or "exec2::4250"; a restarted process is a new Proc.
	Proc string `json:"proc"`
	At   int64  `json:"at"` // wall clock, Unix ms
	// OK is the outcome of an "end": false when the handler failed on purpose.
	OK bool `json:"ok,omitempty"`
}

// Key is what makes a run unique: the database's fire key, with the job standing for the
// trigger (every job of the suite has one trigger).
type Key struct {
	JobID   int64
	Sched   int64
	Attempt int
	Shard   int
}

// Key returns the entry's run key.
func (e Entry) Key() Key { return Key{e.JobID, e.Sched, e.Attempt, e.Shard} }

// Ledger appends entries to a file shared by every process of a run. Each entry is one write
// of one line with O_APPEND, which the kernel keeps whole and in order across processes, and
// a process killed between two writes leaves whole lines behind.
type Ledger struct {
	mu sync.Mutex
	f  *os.File
}

// OpenLedger opens (creating) the ledger file at path for appending.
func OpenLedger(path string) (*Ledger, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: open ledger %s: %w", path, err)
	}
	return &Ledger{f: f}, nil
}

// Append writes e with the current time.
func (l *Ledger) Append(e Entry) error {
	e.At = time.Now().UnixMilli()
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("chaos: append to ledger: %w", err)
	}
	return nil
}

// Close closes the file.
func (l *Ledger) Close() error { return l.f.Close() }

// ReadLedger reads every whole entry of the ledger file.
func ReadLedger(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: read ledger: %w", err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("chaos: ledger %s line %d: %w", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// JobParams are a suite job's params: how long each run takes and which first attempts fail,
// so the checker can tell a retry the job asked for from one it did not.
type JobParams struct {
	RunMs int `json:"run_ms"`
	// FailPct of first attempts fail (chosen by the fire's scheduled time, so every process
	// agrees which).
	FailPct int `json:"fail_pct"`
}

// FailsFirst reports whether attempt 0 of the fire scheduled at sched fails on purpose.
func (p JobParams) FailsFirst(sched int64) bool {
	return p.FailPct > 0 && int((sched/7)%100) < p.FailPct
}
