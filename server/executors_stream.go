package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/dispatch"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/streamconn"
	"github.com/sundial-scheduler/sundial/store"
)

// The server's end of an executor stream (docs/executor-protocol.md, "The stream"). The
// opening GET passes executorAuth as every executor request does (the credential, the app
// and the proof of the instance's key), which binds the stream to that app and instance:
// every call that comes over it is served by the route's own handler as if it had come
// with those headers, so the trust checks (checkApp, sentTo) are the ones HTTP calls pass.

// streamReadLimit bounds one frame from an executor: a batch of results with their values
// (100 results of at most 64 KiB each) and more.
const streamReadLimit = 32 << 20

// The executor's calls a stream serves at once, in two lanes: beats (register, unregister)
// apart, so that a beat never waits behind a queue of results and output the database is slow
// to take; the executor counts a beat that does not come through as its node gone, and the
// cluster counts an executor whose beats are not recorded as silent, its runs lost. Calls read
// while their lane is full wait for it, up to streamWaiting of them and streamWaitingBytes of
// their bodies (what one app's credential can make a node hold); past that a call is answered
// 503 at once, and the executor sends it again (to this node or another) as to a node that
// cannot answer. The stream is read all the while: its pings are answered by the read.
const (
	streamCalls        = 64
	streamBeats        = 4
	streamWaiting      = 1024
	streamWaitingBytes = 64 << 20
)

// callLane is one lane of a stream's calls: slots bounds those served at once; waiting and
// bytes count those read and not answered yet (served or waiting for a slot), and their
// bodies, up to maxWaiting and maxBytes.
type callLane struct {
	slots                chan struct{}
	waiting, bytes       atomic.Int64
	maxWaiting, maxBytes int64
}

func newCallLane(slots, maxWaiting, maxBytes int) *callLane {
	return &callLane{slots: make(chan struct{}, slots), maxWaiting: int64(slots + maxWaiting), maxBytes: int64(maxBytes)}
}

// serve runs do, for a call whose body is size bytes, in its own goroutine once a slot is
// free; or runs busy at once when the calls waiting already are as many, or their bodies as
// large, as the lane holds. It never blocks the stream's read.
func (l *callLane) serve(ctx context.Context, size int, do, busy func()) {
	n, b := l.waiting.Add(1), l.bytes.Add(int64(size))
	if n > l.maxWaiting || b > l.maxBytes && n > 1 {
		l.waiting.Add(-1)
		l.bytes.Add(-int64(size))
		busy()
		return
	}
	go func() {
		defer func() {
			l.waiting.Add(-1)
			l.bytes.Add(-int64(size))
		}()
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			return // the stream ended: the executor's call fails with it, and is sent again
		}
		defer func() { <-l.slots }()
		do()
	}()
}

type streamedKey struct{}

// streamedInstance is the instance whose stream a call came over ("" over HTTP).
func streamedInstance(ctx context.Context) string {
	s, _ := ctx.Value(streamedKey{}).(string)
	return s
}

func (s *Server) executorStream(w http.ResponseWriter, r *http.Request) error {
	from := senderOf(r)
	switch {
	case from.app == "":
		return invalidField(wire.HeaderApp, "a stream names its app")
	case from.instance == "":
		return invalidField(wire.HeaderInstance, "a stream names its instance, proven by its key")
	}
	if err := s.checkApp(r.Context(), from.app); err != nil {
		return err
	}
	select {
	case <-s.executorStreams:
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the server is stopping"}
	default:
	}
	// The server's read and write timeouts are for requests: a stream lives for hours.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	// A ping is the executor's sign of life this node vouches for (dispatch.Remote's vouch):
	// it comes by the read, before any frame of the stream's.
	var heard atomic.Pointer[dispatch.Stream]
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wire.StreamSubprotocol},
		OnPingReceived: func(context.Context, []byte) bool {
			if st := heard.Load(); st != nil {
				st.Heard()
			}
			return true
		}})
	if err != nil {
		return nil // Accept answered
	}
	if c.Subprotocol() != wire.StreamSubprotocol {
		_ = c.Close(websocket.StatusPolicyViolation, "want subprotocol "+wire.StreamSubprotocol)
		return nil
	}
	c.SetReadLimit(streamReadLimit)
	ctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), streamedKey{}, from.instance))
	defer cancel(nil)
	st := s.remote.AttachStream(from.app, from.instance, func(ctx context.Context, b []byte) error {
		return c.Write(ctx, websocket.MessageText, b)
	})
	heard.Store(st)
	s.log.Info("executor stream opened", "app", from.app, "instance", from.instance, "remote", r.RemoteAddr)
	go st.Run(ctx)
	go func() {
		select {
		case <-s.executorStreams:
			cancel(errors.New("the server is stopping"))
		case <-st.Done():
			cancel(st.Err())
		case <-ctx.Done():
		}
	}()
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && strings.HasPrefix(token, credentialPrefix) {
		go s.watchCredential(ctx, c, token)
	}
	err = s.serveStream(ctx, c, st, r)
	st.Close(err)
	cause := context.Cause(ctx)
	_ = c.Close(websocket.StatusGoingAway, "stream ended")
	s.log.Info("executor stream closed", "app", from.app, "instance", from.instance, "err", err, "cause", cause)
	return nil
}

var errRevoked = errors.New("the executor credential was revoked")

// watchCredential ends the stream once its credential is gone (revoked or rotated): the
// stream was admitted by it, and what comes over it is taken on its word. It looks every
// heartbeat interval, as often as an executor's HTTP requests would meet the check.
func (s *Server) watchCredential(ctx context.Context, c *websocket.Conn, token string) {
	hash := hashSecret(token)
	for {
		t := s.clock.NewTimer(s.cfg.ExecutorHeartbeat)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if _, err := s.store.AppCredentialByHash(ctx, hash); errors.Is(err, store.ErrNotFound) {
			s.log.Warn("closing an executor stream: its credential was revoked")
			// Closed here, with its reason: the read loop then ends.
			_ = c.Close(websocket.StatusPolicyViolation, errRevoked.Error())
			return
		}
	}
}

// serveStream reads the executor's frames until the stream ends: replies go to the calls
// waiting for them, calls are served in their lanes by their routes' handlers. It keeps
// reading while calls wait (for the database, for a slot): it answers the executor's pings as
// it reads, and an executor whose pings go unanswered leaves the node. Every frame is a sign
// of the executor's life, as its pings are.
func (s *Server) serveStream(ctx context.Context, c *websocket.Conn, st *dispatch.Stream, open *http.Request) error {
	calls := newCallLane(streamCalls, streamWaiting, streamWaitingBytes)
	beats := newCallLane(streamBeats, streamWaiting, streamWaitingBytes)
	busy := &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable",
		Message: "this stream's calls waiting for the node are as many as it holds; send it again"}
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			return errors.New("a binary frame on the executor stream")
		}
		var f wire.StreamFrame
		if err := wire.Decode(data, &f); err != nil {
			return fmt.Errorf("a frame from the executor: %w", err)
		}
		st.Heard()
		st.Deliver(f.Replies)
		if f.Calls == "" {
			continue
		}
		var in []wire.StreamCall
		if err := wire.Decode([]byte(f.Calls), &in); err != nil {
			return fmt.Errorf("the calls of a frame from the executor: %w", err)
		}
		for _, call := range in {
			lane := calls
			if call.Path == wire.PathRegister || call.Path == wire.PathUnregister {
				lane = beats
			}
			lane.serve(ctx, len(call.Body), func() { st.Reply(s.serveStreamCall(ctx, open, call)) }, func() {
				rec := streamconn.NewRecorder()
				s.writeError(rec, open, busy)
				st.Reply(rec.Reply(call.ID))
			})
		}
	}
}

// serveStreamCall serves one of the executor's calls with its route's handler, as a request
// from the stream's app and instance.
func (s *Server) serveStreamCall(ctx context.Context, open *http.Request, call wire.StreamCall) wire.StreamReply {
	rec := streamconn.NewRecorder()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, call.Path, bytes.NewReader([]byte(call.Body)))
	if err != nil {
		s.writeError(rec, open, invalidField("path", "%v", err))
		return rec.Reply(call.ID)
	}
	req.RemoteAddr = open.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.HeaderApp, open.Header.Get(wire.HeaderApp))
	req.Header.Set(wire.HeaderInstance, open.Header.Get(wire.HeaderInstance))
	var h apiHandler
	switch call.Path {
	case wire.PathRegister:
		h = s.executorRegister
	case wire.PathUnregister:
		h = s.executorUnregister
	case wire.PathLogs:
		h = s.executorLogs
	case wire.PathResults:
		h = s.executorResults
	case api.PathSubtasksMap:
		h = s.executorSubtasksMap
	case api.PathSubtasksClaim:
		h = s.executorSubtasksClaim
	case api.PathSubtasksResults:
		h = s.executorSubtasksResults
	case api.PathSubtasksList:
		h = s.executorSubtasksList
	case api.PathSubtasksReduced:
		h = s.executorSubtasksReduced
	default:
		h = func(http.ResponseWriter, *http.Request) error {
			return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("no executor call %q over the stream", call.Path)}
		}
	}
	if err := h(rec, req); err != nil {
		s.writeError(rec, req, err)
	}
	return rec.Reply(call.ID)
}
