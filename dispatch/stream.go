package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/streamconn"
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
}

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
	r.mu.Lock()
	old := r.streams[instance]
	r.streams[instance] = s
	r.mu.Unlock()
	if old != nil {
		old.Close(errors.New("the executor opened another stream to this node"))
	}
	return s
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
