package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/store"
)

// maxRecordBatch bounds the dispatch records one transaction writes.
const maxRecordBatch = 500

// recordWriteTimeout bounds one batch's write: the batch is written for every fire in it,
// so it does not end with the context of the fire whose goroutine happens to write it.
const recordWriteTimeout = 30 * time.Second

// records writes the remote path's dispatch records (where a run is sent, that its executor
// accepted it) in batches, a statement or two each (Store.ExecutionsRecordDispatches): a
// group commit with no goroutine of its own. A fire's goroutine queues its record; if no write is in flight it writes the queue's
// head (its own record first), and then hands the writing to the first waiter still queued,
// so no fire waits longer than the batches ahead of it. The records of fires started
// together (the engine starts a claimed batch at once) and the acceptances answered
// meanwhile share a transaction, and a lone fire is written at once, with no lingering.
type records struct {
	st store.Store

	mu      sync.Mutex
	queued  []*recordReq
	writing bool
	// queuedHook and leftHook, set by tests, are told the queue's length after each record
	// is queued, and when a waiter leaves.
	queuedHook func(n int)
	leftHook   func()
}

type recordReq struct {
	rec  store.DispatchRecord
	done chan struct{} // closed once written (ok, err set)
	ok   bool
	err  error
	// lead is closed when the writing is handed to this request's waiter; handed and
	// abandoned (its waiter left, its context ended) are guarded by records.mu.
	lead      chan struct{}
	handed    bool
	abandoned bool
}

// write records rec with the others queued and reports whether it applied (the execution
// was still running for rec.Owner), as ExecutionsSetDispatch or ExecutionsDispatchAccepted
// would for it alone.
func (r *records) write(ctx context.Context, rec store.DispatchRecord) (bool, error) {
	req := &recordReq{rec: rec, done: make(chan struct{}), lead: make(chan struct{})}
	r.mu.Lock()
	r.queued = append(r.queued, req)
	lead := !r.writing
	r.writing = true
	if r.queuedHook != nil {
		r.queuedHook(len(r.queued))
	}
	r.mu.Unlock()
	if lead {
		r.writeUntil(ctx, req)
	}
	select {
	case <-req.done:
	case <-req.lead:
		r.writeUntil(ctx, req)
	case <-ctx.Done():
		r.mu.Lock()
		req.abandoned = true
		handed := req.handed
		if r.leftHook != nil {
			r.leftHook()
		}
		r.mu.Unlock()
		if !handed {
			// The batch may still write it: the caller takes this as a failed record, which
			// leaves the run the node's, as any failure of the write does.
			return false, ctx.Err()
		}
		r.writeUntil(ctx, req) // the writing was handed over meanwhile: the others wait on it
	}
	<-req.done
	return req.ok, req.err
}

// writeUntil writes the queue's batches until me is written, then hands the writing to the
// first waiter still queued; records whose waiters left are written too, and the writing
// ends with an empty queue.
func (r *records) writeUntil(ctx context.Context, me *recordReq) {
	ctx = context.WithoutCancel(ctx) // the batch is every queued fire's, not only this one's
	for {
		r.mu.Lock()
		if closed(me.done) {
			for _, q := range r.queued {
				if !q.abandoned {
					q.handed = true
					close(q.lead)
					r.mu.Unlock()
					return
				}
			}
			if len(r.queued) == 0 {
				r.queued, r.writing = nil, false
				r.mu.Unlock()
				return
			}
		}
		batch := r.queued[:min(len(r.queued), maxRecordBatch)]
		r.queued = r.queued[len(batch):]
		r.mu.Unlock()
		r.writeBatch(ctx, batch)
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeBatch writes batch in one transaction and gives each record its outcome.
func (r *records) writeBatch(ctx context.Context, batch []*recordReq) {
	recs := make([]store.DispatchRecord, len(batch))
	for i, q := range batch {
		recs[i] = q.rec
	}
	wctx, cancel := context.WithTimeout(ctx, recordWriteTimeout)
	ok, err := r.st.ExecutionsRecordDispatches(wctx, recs)
	cancel()
	for i, q := range batch {
		if err != nil {
			q.err = err
		} else {
			q.ok = ok[i]
		}
		close(q.done)
	}
}
