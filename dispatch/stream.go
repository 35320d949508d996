package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/streamconn"
	"github.com/sundial-scheduler/sundial/store"
)

// The stream transport: an executor that cannot be called (behind NAT, in a container whose
// address the server cannot reach) dials a node and holds a stream open; it registers the
// address wire.StreamAddress(its instance). This node sends the calls it would POST to such
// an address down the stream it holds for the instance, in batches (streamconn), each frame
// signed once for the app and instance as a POST would be. A node holds only the streams
// dialled to it, so it dispatches only to those instances: the others are not online for it.

// Stream is the stream of one executor instance on this node.
type Stream struct {
	*streamconn.Peer
	r             *Remote
	app, instance string
	// heard is when the executor's last frame or ping came (Unix ns, the dispatcher's clock).
	heard atomic.Int64
}

// Heard records that a frame or a ping from the executor came down its stream now.
func (s *Stream) Heard() { s.heard.Store(s.r.cfg.Clock.Now().UnixNano()) }

// AttachStream makes the stream of app's instance, whose frames write writes, the one this
// node sends that instance's calls down (replacing one it held: the executor dialled again).
// The caller reads the other side's frames (Deliver their replies), runs Run, and Closes it.
func (r *Remote) AttachStream(app, instance string, write func(context.Context, []byte) error) *Stream {
	s := &Stream{r: r, app: app, instance: instance}
	to := execsign.Target{App: app, Instance: instance, Address: wire.StreamAddress(instance)}
	// The gap is on the real clock whatever the dispatcher's: it paces writes to a socket.
	s.Peer = streamconn.New(streamconn.Config{Write: write, Gap: streamconn.DefaultGap, Sign: func(calls []byte) (string, error) {
		signer, err := r.keys.signer(r.ctx)
		if err != nil {
			return "", err
		}
		req := &http.Request{Method: http.MethodPost, Header: http.Header{}}
		if err := signer.Sign(req, wire.PathStream, calls, to, r.cfg.Clock.Now()); err != nil {
			return "", err
		}
		return req.Header.Get(execsign.Header), nil
	}})
	s.Heard()
	r.mu.Lock()
	old := r.streams[instance]
	r.streams[instance] = s
	r.mu.Unlock()
	if old != nil {
		old.Close(errors.New("the executor opened another stream to this node"))
	}
	r.vouching.StartFunc(r.ctx, r.vouch)
	return s
}

// vouch keeps alive in the registry, every heartbeat interval, the instances whose streams
// carried a frame or a ping since the round before, all in one statement
// (Store.RegistryTouch). An executor's own beats say the same and more (its handlers, the
// runs it holds), but each is a call of its own that waits its turn in the stream's beat lane
// and for the database: on a node or a database slow enough to make them late, the cluster
// would count a live executor silent and declare its runs lost. A ping is answered by the
// stream's read, which never waits, so while pings come the executor is alive. A frozen or
// cut-off executor sends none and is not vouched for: it goes silent as before, at most one
// interval later.
func (r *Remote) vouch(ctx context.Context) {
	since := r.cfg.Clock.Now().UnixNano()
	for {
		t := r.cfg.Clock.NewTimer(r.cfg.HeartbeatInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.closing: // a stream attached after Close started it again
			t.Stop()
			return
		case <-t.C():
		}
		now := r.cfg.Clock.Now().UnixNano()
		var keys []store.InstanceKey
		r.mu.Lock()
		for _, s := range r.streams {
			if s.heard.Load() >= since {
				keys = append(keys, store.InstanceKey{App: s.app, Address: wire.StreamAddress(s.instance), Instance: s.instance})
			}
		}
		r.mu.Unlock()
		since = now
		if len(keys) == 0 {
			continue
		}
		if _, err := r.cfg.Store.RegistryTouch(ctx, keys); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("could not vouch for the executors whose streams this node holds", "streams", len(keys), "err", err)
		}
	}
}

// Close ends the stream and forgets it.
func (s *Stream) Close(cause error) {
	s.r.mu.Lock()
	if s.r.streams[s.instance] == s {
		delete(s.r.streams, s.instance)
	}
	s.r.mu.Unlock()
	s.Peer.Close(cause)
}

// Streams counts the executor streams this node holds.
func (r *Remote) Streams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.streams)
}

// streamHere tells whether addr is a streamed instance's address, and if so whether this node
// holds its stream.
func (r *Remote) streamHere(addr string) (streamed, here bool) {
	instance, ok := strings.CutPrefix(addr, wire.StreamScheme)
	if !ok {
		return false, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return true, r.streams[instance] != nil
}

// errNoStream is a call to a streamed instance whose stream this node does not hold (any
// more): a network error, as an executor that does not answer.
var errNoStream = errors.New("this node holds no stream of the executor")

// callStream is call for a streamed instance: down its stream, and checked here as the
// executor would check a signed POST (the stream is the instance's own and the app's).
func (r *Remote) callStream(ctx context.Context, app, addr, path, instance string, body []byte, out any) error {
	streamed := strings.TrimPrefix(addr, wire.StreamScheme)
	r.mu.Lock()
	s := r.streams[streamed]
	r.mu.Unlock()
	switch {
	case s == nil:
		return fmt.Errorf("POST %s to %s: %w", path, addr, errNoStream)
	case s.app != app:
		return &MisdirectedError{Address: addr, Misdirected: wire.Misdirected{Reason: wire.MisdirectedApp, App: s.app, Instance: s.instance,
			Message: fmt.Sprintf("the call is for an executor of app %q, the stream is app %q's", app, s.app)}}
	case instance != "" && instance != s.instance:
		return &MisdirectedError{Address: addr, Misdirected: wire.Misdirected{Reason: wire.MisdirectedInstance, App: s.app, Instance: s.instance,
			Message: fmt.Sprintf("the call is for executor instance %s, the stream is %s's", instance, s.instance)}}
	}
	rep, err := s.Call(ctx, path, body)
	if err != nil {
		return fmt.Errorf("POST %s to %s: %w", path, addr, err)
	}
	if rep.Status == wire.StatusMisdirected {
		m := &MisdirectedError{Address: addr}
		if err := wire.Decode([]byte(rep.Body), &m.Misdirected); err != nil {
			return fmt.Errorf("POST %s: a %d answer without its reason: %w", path, rep.Status, err)
		}
		return m
	}
	if rep.Status != http.StatusOK {
		return &wire.StatusError{Path: path, Status: rep.Status, Body: string(rep.Body)}
	}
	if err := wire.Decode([]byte(rep.Body), out); err != nil {
		return fmt.Errorf("POST %s: decode the answer: %w", path, err)
	}
	return nil
}
