package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// OutputEvent is one event of an execution's output stream: a line, or the end, which
// carries the execution as it ended. Data is the event's JSON as the server sent it.
type OutputEvent struct {
	Line *LogLine
	End  *Execution
	Data []byte
}

// FollowOutput streams an execution's output lines after line number after, calling fn for
// each event, until the end event (ended is true), ctx ends, or the server closes the stream
// (as it does when it shuts down): the caller may follow again after the last line it saw.
func (c *Client) FollowOutput(ctx context.Context, id, after int64, fn func(OutputEvent) error) (ended bool, err error) {
	q := url.Values{"follow": {"true"}}
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	path := idPath("/executions", id, "/output")
	resp, err := c.send(ctx, "GET", path, q, nil, "text/event-stream")
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	ended, err = readEvents(resp.Body, func(event string, data []byte) error {
		ev := OutputEvent{Data: data}
		switch event {
		case "line":
			ev.Line = new(LogLine)
			if err := json.Unmarshal(data, ev.Line); err != nil {
				return fmt.Errorf("decode output line %s: %w", data, err)
			}
		case "end":
			ev.End = new(Execution)
			if err := json.Unmarshal(data, ev.End); err != nil {
				return fmt.Errorf("decode end event %s: %w", data, err)
			}
		default:
			return nil
		}
		return fn(ev)
	})
	if err != nil && ctx.Err() == nil {
		return ended, fmt.Errorf("GET %s: %w", path, err)
	}
	return ended, nil
}

// readEvents parses a text/event-stream, calling fn for each event. It reports whether an
// "end" event arrived.
func readEvents(r io.Reader, fn func(event string, data []byte) error) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // one output line can be long
	var event string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data == nil {
				continue
			}
			if err := fn(event, data); err != nil {
				return false, err
			}
			if event == "end" {
				return true, nil
			}
			event, data = "", nil
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return false, err
	}
	return false, nil
}
