package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/internal/backoff"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/internal/streamconn"
)

// The stream transport (TransportStream, docs/executor-protocol.md "The stream"): the
// executor dials each server node it is given and holds a WebSocket open to each, over which
// it makes its calls (post sends them down the stream of the node that answered last, and
// the next one's when that one cannot answer, as over HTTP) and takes the node's calls (runs
// in batches, kills, beats), each frame of them signed with the cluster key for this app and
// instance, and served by the handlers the push transport's endpoint serves them with. A
// node sends runs only down streams it holds, which is why the executor holds one to each:
// when one dies, the others carry its results, and it is dialled again until it answers.

// streamReadLimit bounds one frame from a node: a batch of runs with their parameters.
const streamReadLimit = 64 << 20

// streamDialTimeout bounds the opening of a stream.
const streamDialTimeout = 10 * time.Second

// streams are the open streams, by server index.
type streams struct {
	mu    sync.Mutex
	peers []*streamconn.Peer
	// opened is closed when the first stream opens: Start registers once it has.
	opened     chan struct{}
	openedOnce sync.Once
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func (e *Executor) openStreams() {
	ctx, cancel := context.WithCancel(context.Background())
	e.streams.peers = make([]*streamconn.Peer, len(e.servers))
	e.streams.opened = make(chan struct{})
	e.streams.cancel = cancel
	for i := range e.servers {
		e.streams.wg.Add(1)
		go func() {
			defer e.streams.wg.Done()
			e.holdStream(ctx, i)
		}()
	}
}

// awaitStream waits until a stream is open, for at most a dial's time: the first
// registration goes up it rather than fail once while the streams are being dialled.
func (e *Executor) awaitStream(ctx context.Context) {
	t := e.cfg.Clock.NewTimer(streamDialTimeout)
	defer t.Stop()
	select {
	case <-e.streams.opened:
	case <-ctx.Done():
	case <-t.C():
	}
}

// closeStreams closes the streams and waits for their goroutines (push transport: nothing).
func (e *Executor) closeStreams() {
	if e.streams.cancel == nil {
		return
	}
	e.streams.cancel()
	e.streams.wg.Wait()
}

// StreamsOpen counts the streams open now (0 with the push transport).
func (e *Executor) StreamsOpen() int {
	e.streams.mu.Lock()
	defer e.streams.mu.Unlock()
	n := 0
	for _, p := range e.streams.peers {
		if p != nil {
			n++
		}
	}
	return n
}

// holdStream keeps a stream to server i open until ctx ends: dialled again after it closes,
// from 200 ms up to 5 s apart while the node does not answer.
func (e *Executor) holdStream(ctx context.Context, i int) {
	pause := backoff.Sequence{Policy: backoff.Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second}}
	for {
		opened, err := e.stream(ctx, i)
		if ctx.Err() != nil {
			return
		}
		if opened {
			pause.Reset()
			e.log.Warn("stream to the server closed; dialling again", "server", e.servers[i], "err", err)
		} else {
			e.log.Warn("could not open a stream to the server", "server", e.servers[i], "err", err)
		}
		t := e.cfg.Clock.NewTimer(pause.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// stream opens one stream to server i and serves it until it closes or ctx ends. opened
// tells whether it was opened.
func (e *Executor) stream(ctx context.Context, i int) (opened bool, err error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+e.cfg.Token)
	h.Set(wire.HeaderApp, e.cfg.App)
	h.Set(wire.HeaderInstance, e.instance)
	// The opening GET proves the instance as every request does: the stream is its own.
	e.key.Prove(&http.Request{Method: http.MethodGet, Header: h}, wire.PathStream, nil, e.cfg.App, e.cfg.Clock.Now())
	dialCtx, cancel := context.WithTimeout(ctx, streamDialTimeout)
	c, resp, err := websocket.Dial(dialCtx, e.servers[i]+wire.PathStream, &websocket.DialOptions{HTTPClient: e.client,
		HTTPHeader: h, Subprotocols: []string{wire.StreamSubprotocol}})
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return false, &wire.StatusError{Path: wire.PathStream, Status: resp.StatusCode, Body: err.Error()}
		}
		return false, err
	}
	defer c.CloseNow()
	c.SetReadLimit(streamReadLimit)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	peer := streamconn.New(streamconn.Config{Gap: streamconn.DefaultGap,
		Write: func(ctx context.Context, b []byte) error { return c.Write(ctx, websocket.MessageText, b) }})
	go peer.Run(ctx)
	e.streams.mu.Lock()
	e.streams.peers[i] = peer
	e.streams.mu.Unlock()
	e.streams.openedOnce.Do(func() { close(e.streams.opened) })
	defer func() {
		e.streams.mu.Lock()
		e.streams.peers[i] = nil
		e.streams.mu.Unlock()
		peer.Close(err)
	}()
	e.log.Info("stream open", "server", e.servers[i])
	go e.pingStream(ctx, c)
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return true, err
		}
		if typ != websocket.MessageText {
			return true, errors.New("a binary frame on the stream")
		}
		var f wire.StreamFrame
		if err := wire.Decode(data, &f); err != nil {
			return true, fmt.Errorf("a frame from the server: %w", err)
		}
		peer.Deliver(f.Replies)
		if f.Calls != "" {
			e.serveFrame(ctx, peer, f)
		}
	}
}

// pongBeats is how many heartbeat intervals a node may take to answer a ping before its
// stream is closed: as long as the cluster lets an executor stay silent before it counts the
// executor gone. A node that is slow (its machine overloaded, a pause of its process) still
// holds the runs it sent; leaving it sooner costs those runs' results a detour and the node
// its stream, and buys nothing: the calls themselves go to another node after serverWait.
const pongBeats = 3

// pingStream pings the node every heartbeat interval and closes the stream when no pong
// comes within pongBeats intervals: a node cut off (not closed) is left for another.
func (e *Executor) pingStream(ctx context.Context, c *websocket.Conn) {
	for {
		wait := e.serverWait()
		t := e.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		pctx, cancel := context.WithTimeout(ctx, pongBeats*wait)
		err := c.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			e.log.Warn("the server did not answer a ping; closing the stream", "err", err, "waited", pongBeats*wait)
			c.CloseNow()
			return
		}
	}
}

// serveFrame serves the calls of a frame from the server: the frame's signature is checked
// once, as a POST's would be (a frame not signed for this app and instance by a cluster key
// the servers named is refused, call by call), and each call is served by its handler.
func (e *Executor) serveFrame(ctx context.Context, peer *streamconn.Peer, f wire.StreamFrame) {
	var calls []wire.StreamCall
	if err := wire.Decode([]byte(f.Calls), &calls); err != nil {
		e.log.Warn("a frame of calls from the server that is not JSON", "err", err)
		return
	}
	to, err := e.verify.Verify(&http.Request{Method: http.MethodPost, Header: http.Header{execsign.Header: {f.Signature}}},
		wire.PathStream, []byte(f.Calls))
	var m *wire.Misdirected
	if err == nil {
		m = e.misdirected(to)
	}
	if err != nil || m != nil {
		e.log.Warn("refused a frame of calls from the server", "calls", len(calls), "err", err, "misdirected", m)
	}
	for _, call := range calls {
		rec := streamconn.NewRecorder()
		c, known := e.callTable[call.Path]
		switch {
		case err != nil:
			http.Error(rec, err.Error(), http.StatusUnauthorized)
		case m != nil:
			rec.Header().Set("Content-Type", "application/json")
			rec.WriteHeader(wire.StatusMisdirected)
			_ = json.NewEncoder(rec).Encode(m)
		case !known:
			http.Error(rec, fmt.Sprintf("no call %q", call.Path), http.StatusNotFound)
		case c.needInstance && to.Instance == "":
			http.Error(rec, fmt.Sprintf("%s must be signed for an executor instance", call.Path), http.StatusUnauthorized)
		default:
			r, _ := http.NewRequestWithContext(ctx, http.MethodPost, call.Path, nil)
			c.serve(rec, r, []byte(call.Body), to.Instance)
		}
		peer.Reply(rec.Reply(call.ID))
	}
}

// postStream is postTo over the stream to server i.
func (e *Executor) postStream(ctx context.Context, i int, path string, body []byte, out any) error {
	e.streams.mu.Lock()
	peer := e.streams.peers[i]
	e.streams.mu.Unlock()
	if peer == nil {
		return fmt.Errorf("POST %s: no stream to %s is open", path, e.servers[i])
	}
	rep, err := peer.Call(ctx, path, body)
	if err != nil {
		return fmt.Errorf("POST %s over the stream to %s: %w", path, e.servers[i], err)
	}
	if rep.Status < 200 || rep.Status > 299 {
		return &wire.StatusError{Path: path, Status: rep.Status, Body: string(rep.Body)}
	}
	if out != nil && rep.Body != "" {
		if err := wire.Decode([]byte(rep.Body), out); err != nil {
			return fmt.Errorf("POST %s: decode answer: %w", path, err)
		}
	}
	return nil
}
