package executor

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sundial-scheduler/sundial/executor/wire"
)

const (
	logFlushEvery = 200 * time.Millisecond
	logBatchLines = 100
	// logMaxBuffered bounds the lines kept while the server does not take them; the oldest
	// go first, so a long outage costs the start of the output, not the executor's memory.
	logMaxBuffered = 10000
	logSendTimeout = 5 * time.Second
)

// logSink buffers one run's output lines and streams them to the server: every
// logFlushEvery, whenever logBatchLines are waiting, and once more when the run ends. Its
// streaming goroutine starts with the run's first line: most runs print nothing, and a
// goroutine, a timer and three channels per run were a tenth of a busy executor's work.
type logSink struct {
	e  *Executor
	id int64

	mu      sync.Mutex
	last    int64 // last line number given out
	buf     []wire.LogLine
	dropped int64 // lines dropped for logMaxBuffered
	closed  bool
	// started is set once loop runs, or once the sink closes before any line: no loop
	// starts after that.
	started bool

	full chan struct{} // a batch is ready
	stop chan struct{}
	done chan struct{}
}

func newLogSink(e *Executor, id int64) *logSink {
	return &logSink{e: e, id: id}
}

// add buffers one line; a zero at (a record without a time) is stamped now.
func (s *logSink) add(at time.Time, msg string) {
	if at.IsZero() {
		at = s.e.cfg.Clock.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // a handler that outlived its run: its lines have no execution to go to
	}
	if !s.started {
		s.started = true
		s.full, s.stop, s.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
		go s.loop()
	}
	s.last++
	s.buf = append(s.buf, wire.LogLine{Line: s.last, At: at.UnixMilli(), Message: storableLine(msg)})
	if over := len(s.buf) - logMaxBuffered; over > 0 {
		s.buf = append(s.buf[:0], s.buf[over:]...)
		s.dropped += int64(over)
	}
	if len(s.buf) >= logBatchLines {
		select {
		case s.full <- struct{}{}:
		default:
		}
	}
}

func (s *logSink) loop() {
	defer close(s.done)
	t := s.e.cfg.Clock.NewTimer(logFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C():
		case <-s.full:
		}
		s.flush()
		t.Reset(logFlushEvery)
	}
}

// flush sends what is buffered, in batches; lines the server did not take stay for the
// next flush.
func (s *logSink) flush() {
	for {
		s.mu.Lock()
		n := min(len(s.buf), logBatchLines)
		batch := append([]wire.LogLine(nil), s.buf[:n]...)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(s.e.baseCtx, logSendTimeout)
		err := s.e.post(ctx, wire.PathLogs, wire.LogBatch{ExecutionID: s.id, Lines: batch}, nil)
		cancel()
		if err != nil {
			s.e.log.Debug("sending output lines failed; keeping them", "execution_id", s.id, "err", err)
			return
		}
		s.mu.Lock()
		// Lines dropped for the cap meanwhile may have shifted the buffer: drop what was sent by number.
		i := 0
		for i < len(s.buf) && s.buf[i].Line <= batch[len(batch)-1].Line {
			i++
		}
		s.buf = append(s.buf[:0], s.buf[i:]...)
		s.mu.Unlock()
	}
}

// close stops streaming and sends the rest once. What the server still did not take goes
// back to the caller to travel with the run's result (the newest lines, up to
// wire.MaxResultLinesBytes); lost counts the lines neither got to the server nor fit there,
// which the result reports so the run shows its output was cut.
func (s *logSink) close() (unsent []wire.LogLine, lost int64) {
	s.mu.Lock()
	running := s.started
	s.started = true
	s.mu.Unlock()
	if running {
		close(s.stop)
		<-s.done
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	first, size := len(s.buf), 0
	for first > 0 && size+len(s.buf[first-1].Message) <= wire.MaxResultLinesBytes {
		first--
		size += len(s.buf[first].Message)
	}
	if first > 0 {
		s.e.log.Warn("output lines lost: the server did not take them and they do not fit in the result",
			"execution_id", s.id, "lines", first)
	}
	if len(s.buf) > first {
		unsent = s.buf[first:]
	}
	return unsent, s.dropped + int64(first)
}

// storableLine makes an output line one the server stores on every database: valid UTF-8,
// no NUL (PostgreSQL refuses it, and the server answers 400), at most wire.MaxLineBytes. Binary
// output is kept readable instead of failing the whole batch.
func storableLine(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.ReplaceAll(msg, "\x00", "\uFFFD")
	if len(msg) > wire.MaxLineBytes {
		cut := wire.MaxLineBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return msg
}
