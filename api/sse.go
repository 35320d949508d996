package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
)

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
