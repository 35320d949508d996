package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/backoff"
)

const (
	resultBatch = 100
	// resultBatchBytes keeps a request of results under the server's 1 MiB body limit.
	resultBatchBytes  = 768 << 10
	resultSendTimeout = 10 * time.Second
	// spoolPrefix names the spool's files, each holding the results one spooling wrote;
	// oldSpoolPrefix the one-result files of earlier versions, still read on start.
	spoolPrefix    = "results-"
	oldSpoolPrefix = "result-"
)

// reporter delivers results. It sends them as they come; when the server does not take
// them it writes those not on disk yet to the spool directory (one file for all of them,
// written atomically with one fsync: a stop or an outage with thousands of results waiting
// spools them at once) and retries with backoff until the server takes them. On start it
// picks up what an earlier process spooled. A result is on disk from its first failed
// delivery until the server has it, so neither a server restart nor an executor restart
// loses it.
type reporter struct {
	e   *Executor
	dir string

	mu      sync.Mutex
	pending map[int64]*pendingResult
	// files counts, for each spool file, the pending results it holds: a file goes once
	// none does.
	files map[string]int
	// spools numbers this process's spool files, after the time it started, so that a later
	// file sorts after an earlier one (load: the later result for an execution wins).
	spools  int64
	started int64

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	backoff backoff.Sequence
}

type pendingResult struct {
	res  wire.Result
	file string // the spool file holding res, "" while it is only in memory
}

func newReporter(e *Executor, dir string) (*reporter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("executor: spool directory %s: %w", dir, err)
	}
	r := &reporter{
		e: e, dir: dir, pending: map[int64]*pendingResult{}, files: map[string]int{}, started: time.Now().UnixNano(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		backoff: backoff.Sequence{Policy: backoff.Policy{Initial: 200 * time.Millisecond, Max: 30 * time.Second}},
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads the results earlier processes spooled, oldest file first, so that a result
// spooled again later (the same execution reported anew) wins.
func (r *reporter) load() error {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return fmt.Errorf("executor: read spool directory %s: %w", r.dir, err)
	}
	var old, batches []string
	for _, ent := range entries {
		name := ent.Name()
		switch {
		case strings.HasPrefix(name, ".tmp-"):
			_ = os.Remove(filepath.Join(r.dir, name)) // a write that a crash interrupted; nothing in it was spooled
		case !strings.HasSuffix(name, ".json"):
		case strings.HasPrefix(name, spoolPrefix):
			batches = append(batches, name)
		case strings.HasPrefix(name, oldSpoolPrefix):
			old = append(old, name)
		}
	}
	slices.Sort(batches) // os.ReadDir sorts too; the order matters here, so it is said
	if n := len(batches); n > 0 {
		// This process's files sort after every earlier one, whatever the clock says.
		var last int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(batches[n-1], spoolPrefix), "%d-", &last); err == nil {
			r.started = max(r.started, last+1)
		}
	}
	for _, name := range append(old, batches...) {
		path := filepath.Join(r.dir, name)
		b, err := os.ReadFile(path)
		var results []wire.Result
		if err == nil && strings.HasPrefix(name, spoolPrefix) {
			err = json.Unmarshal(b, &results)
		} else if err == nil {
			results = make([]wire.Result, 1)
			err = json.Unmarshal(b, &results[0])
		}
		if err == nil && slices.ContainsFunc(results, func(res wire.Result) bool { return res.ExecutionID <= 0 }) {
			err = errors.New("a result without an execution id")
		}
		if err != nil {
			r.e.log.Error("unreadable spooled results; moved aside", "file", path, "err", err)
			_ = os.Rename(path, path+".bad")
			continue
		}
		for _, res := range results {
			r.files[name]++
			r.holdLocked(&pendingResult{res: res, file: name}) // an earlier file goes once it holds none
		}
	}
	if len(r.pending) > 0 {
		r.e.log.Info("spooled results to deliver", "count", len(r.pending), "dir", r.dir)
		r.poke()
	}
	return nil
}

// holdLocked makes p the pending result of its execution, in place of any earlier one;
// r.mu is held (or the reporter not shared yet).
func (r *reporter) holdLocked(p *pendingResult) {
	id := p.res.ExecutionID
	if prev := r.pending[id]; prev != nil {
		r.unspoolLocked(prev)
	}
	r.pending[id] = p
}

// unspoolLocked forgets that p is on disk: its file goes once no pending result is in it.
func (r *reporter) unspoolLocked(p *pendingResult) {
	if p.file == "" {
		return
	}
	r.files[p.file]--
	if r.files[p.file] <= 0 {
		r.dropFileLocked(p.file)
	}
	p.file = ""
}

func (r *reporter) dropFileLocked(name string) {
	delete(r.files, name)
	if err := os.Remove(filepath.Join(r.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.e.log.Error("removing delivered results from the spool", "file", name, "err", err)
	}
}

func (r *reporter) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *reporter) add(res wire.Result) {
	r.mu.Lock()
	p := &pendingResult{res: res}
	if prev := r.pending[res.ExecutionID]; prev != nil && prev.file != "" {
		// The result it replaces is on disk: so is this one before that one goes.
		r.spoolLocked([]*pendingResult{p})
	}
	r.holdLocked(p)
	r.mu.Unlock()
	r.poke()
}

func (r *reporter) loop() {
	defer close(r.done)
	// A send in flight ends when the reporter is closed: close sends what is left within
	// Stop's context, so Stop does not wait out a server that does not answer.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var retry <-chan time.Time
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
			if retry != nil {
				// The server is failing: keep new results safe on disk and wait for the retry.
				r.spoolAll()
				continue
			}
		case <-retry:
		}
		if err := r.deliver(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := r.backoff.Next()
			r.e.log.Warn("delivering results failed; spooled, retrying", "in", d, "err", err)
			retry = r.e.cfg.Clock.NewTimer(d).C()
		} else {
			r.backoff.Reset()
			retry = nil
		}
	}
}

// deliver sends every pending result once, in batches. What the server did not take is
// spooled before deliver returns the error.
func (r *reporter) deliver(ctx context.Context) error {
	r.mu.Lock()
	pending := make([]*pendingResult, 0, len(r.pending))
	for _, p := range r.pending {
		pending = append(pending, p)
	}
	r.mu.Unlock()
	slices.SortFunc(pending, func(a, b *pendingResult) int { return cmp.Compare(a.res.ExecutionID, b.res.ExecutionID) })
	var first error
	failed := 0
	for len(pending) > 0 {
		n := batchLen(pending)
		if err := r.send(ctx, pending[:n]); err != nil {
			failed++
			first = cmp.Or(first, err)
			if ctx.Err() != nil {
				// The rest would fail alike: they are spooled below, not sent.
				failed += (len(pending) - n + resultBatch - 1) / resultBatch
				break
			}
		}
		pending = pending[n:]
	}
	switch failed {
	case 0:
		return nil
	case 1:
		r.spoolAll()
		return first
	}
	r.spoolAll()
	// One error, however many batches: a stop beyond the server's pace would otherwise
	// print the same failure once a batch.
	return fmt.Errorf("%d batches of results not delivered, the first: %w", failed, first)
}

// batchLen is how many of pending the next request carries: up to resultBatch, and up to
// resultBatchBytes of text (results that carry values or output lines are large), at least one.
func batchLen(pending []*pendingResult) int {
	size := 0
	for i, p := range pending {
		size += resultSize(p.res)
		if i == resultBatch || (i > 0 && size > resultBatchBytes) {
			return i
		}
	}
	return len(pending)
}

// resultSize estimates res's JSON: its text, and a bound on the rest.
func resultSize(res wire.Result) int {
	n := 256 + len(res.Message) + len(res.Result) + len(res.Traceparent)
	for _, l := range res.Lines {
		n += 64 + len(l.Message)
	}
	return n
}

// send delivers one batch. A batch the server refuses outright (4xx) is sent again one by
// one, so one result it cannot take does not hold the others; a single refused result is
// dropped, since sending it again would be refused again.
func (r *reporter) send(ctx context.Context, batch []*pendingResult) error {
	results := make([]wire.Result, len(batch))
	for i, p := range batch {
		results[i] = p.res
	}
	sendCtx, cancel := context.WithTimeout(ctx, resultSendTimeout)
	err := r.e.post(sendCtx, wire.PathResults, wire.ResultBatch{Results: results}, &wire.ResultsResponse{})
	cancel()
	switch {
	case err == nil:
		r.delivered(batch)
		return nil
	case permanent(err) && len(batch) > 1:
		var errs []error
		for i := range batch {
			errs = append(errs, r.send(ctx, batch[i:i+1]))
		}
		return errors.Join(errs...)
	case permanent(err) && len(batch[0].res.Lines) > 0:
		// The result matters more than its output: sent again without the lines, counted lost.
		p := batch[0]
		r.e.log.Warn("the server refused a result with output lines; sending it without them",
			"execution_id", p.res.ExecutionID, "lines", len(p.res.Lines), "err", err)
		r.mu.Lock()
		p.res.LinesLost += int64(len(p.res.Lines))
		p.res.Lines = nil
		r.mu.Unlock()
		return r.send(ctx, batch)
	case permanent(err):
		r.e.log.Error("the server refused a result; dropping it", "execution_id", batch[0].res.ExecutionID, "state", batch[0].res.State, "err", err)
		r.delivered(batch)
		return nil
	}
	return err
}

func (r *reporter) delivered(batch []*pendingResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sent := range batch {
		id := sent.res.ExecutionID
		if r.pending[id] != sent {
			continue // replaced meanwhile by a newer result for the same id
		}
		delete(r.pending, id)
		r.unspoolLocked(sent)
	}
}

// spoolAll writes every pending result that is not on disk yet, all in one file.
func (r *reporter) spoolAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var fresh []*pendingResult
	for _, p := range r.pending {
		if p.file == "" {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		r.spoolLocked(fresh)
	}
}

// spoolLocked writes fresh to a new spool file; r.mu is held.
func (r *reporter) spoolLocked(fresh []*pendingResult) {
	results := make([]wire.Result, len(fresh))
	for i, p := range fresh {
		results[i] = p.res
	}
	r.spools++
	name := fmt.Sprintf("%s%020d-%08d.json", spoolPrefix, r.started, r.spools)
	if err := r.write(name, results); err != nil {
		r.e.log.Error("spooling results failed; they are only in memory", "count", len(results), "err", err)
		return
	}
	for _, p := range fresh {
		p.file = name
	}
	r.files[name] = len(fresh)
}

// write stores results in the spool file name atomically: a temporary file, synced, renamed
// into place.
func (r *reporter) write(name string, results []wire.Result) error {
	b, err := json.Marshal(results)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(r.dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("spool %s: %w", r.dir, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(r.dir, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("spool %d results in %s: %w", len(results), r.dir, err)
	}
	return nil
}

// close stops the retry loop, tries once more within ctx, and makes sure whatever is still
// undelivered is on disk for the next process.
func (r *reporter) close(ctx context.Context) error {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	n := len(r.pending)
	r.mu.Unlock()
	if n == 0 {
		return nil
	}
	if err := r.deliver(ctx); err != nil {
		r.spoolAll()
		return fmt.Errorf("results left in %s for the next start: %w", r.dir, err)
	}
	return nil
}

// pendingIDs lists the executions whose results wait for delivery.
func (r *reporter) pendingIDs() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]int64, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	return ids
}
