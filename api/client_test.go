package api

import (
	"strings"
	"testing"
)

func TestReadEvents(t *testing.T) {
	stream := "event: line\nid: 1\ndata: {\"line\":1}\n\n: a comment\n\nevent: line\nid: 2\ndata: {\"line\":2}\n\n" +
		"event: end\ndata: {\"id\":9}\n\nevent: line\ndata: {\"after\":\"end\"}\n\n"
	var got []string
	ended, err := readEvents(strings.NewReader(stream), func(event string, data []byte) error {
		got = append(got, event+" "+string(data))
		return nil
	})
	want := []string{`line {"line":1}`, `line {"line":2}`, `end {"id":9}`}
	if err != nil || !ended || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ended %v, err %v, events %q; want true, nil, %q", ended, err, got, want)
	}
	// A stream cut before its end event is reported as not ended, so the caller resumes.
	ended, err = readEvents(strings.NewReader("event: line\nid: 5\ndata: {}\n\n"), func(string, []byte) error { return nil })
	if ended || err != nil {
		t.Errorf("cut stream: ended %v, err %v; want false, nil", ended, err)
	}
}
