package xxljob

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDecodeCallbacksBothShapes(t *testing.T) {
	want := []Callback{{LogID: 7, LogDateTime: 1586629003729, HandleCode: 200, HandleMsg: "ok"}}
	for _, c := range []struct {
		body string
		gen  Generation
	}{
		{`[{"logId":7,"logDateTim":1586629003729,"handleCode":200,"handleMsg":"ok"}]`, Gen33},
		{` {"callbackList":[{"logId":7,"logDateTime":1586629003729,"handleCode":200,"handleMsg":"ok"}]}`, Gen35},
	} {
		got, gen, err := DecodeCallbacks([]byte(c.body))
		if err != nil || gen != c.gen || !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeCallbacks(%s) = %+v, %s, %v; want %+v, %s", c.body, got, gen, err, want, c.gen)
		}
	}
	for _, bad := range []string{"", "null", `"x"`, `[{"logId":"x"}]`} {
		if _, _, err := DecodeCallbacks([]byte(bad)); err == nil {
			t.Errorf("DecodeCallbacks(%q) took it", bad)
		}
	}
	// What a generation sends, read back.
	for _, gen := range Generations {
		b, err := EncodeCallbacks(gen, want)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := DecodeCallbacks(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s read back as %+v, %v", gen, b, got, err)
		}
	}
}

func TestReplyEnvelopes(t *testing.T) {
	payload := json.RawMessage(`{"fromLineNum":1,"toLineNum":2,"logContent":"a\nb\n","isEnd":false}`)
	for gen, want := range map[Generation][]string{Gen2: {"content"}, Gen33: {"data"}, Gen35: {"data"}, "": {"content", "data"}} {
		b := EncodeReply(gen, Reply{Code: 200, Payload: payload})
		var env map[string]json.RawMessage
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"content", "data"} {
			_, has := env[k]
			if wanted := contains(want, k); has != wanted {
				t.Errorf("%q envelope %s: %s present %v, want %v", gen, b, k, has, wanted)
			}
		}
		r, err := DecodeReply(b)
		if err != nil || !r.OK() || string(r.Payload) != string(payload) {
			t.Errorf("%q: DecodeReply(%s) = %+v, %v", gen, b, r, err)
		}
		var l LogResult
		if err := json.Unmarshal(r.Payload, &l); err != nil || len(l.Lines()) != 2 || l.Lines()[1] != "b" {
			t.Errorf("%q: log lines %q, %v", gen, l.Lines(), err)
		}
	}
	r, err := DecodeReply([]byte(`{"code":500,"msg":"The access token is wrong.","content":null}`))
	if err != nil || r.OK() || r.Msg != MsgWrongToken || r.Payload != nil {
		t.Errorf("refusal read as %+v, %v", r, err)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestParseGeneration(t *testing.T) {
	for in, want := range map[string]Generation{"2.x": Gen2, "2.4.2": Gen2, "3.2.1": Gen2, "3.3": Gen33, "3.4.2": Gen33, "3.5": Gen35, "3.5.0": Gen35} {
		if got, err := ParseGeneration(in); err != nil || got != want {
			t.Errorf("ParseGeneration(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1.9", "4.0", "latest"} {
		if g, err := ParseGeneration(bad); err == nil {
			t.Errorf("ParseGeneration(%q) = %q, want an error", bad, g)
		}
	}
}

func TestMapping(t *testing.T) {
	for h, want := range map[string]string{"demoJobHandler": GlueBean, "shell": "GLUE_SHELL", "Python3": "GLUE_PYTHON", "GLUE_PHP": "GLUE_PHP", "nodejs": "GLUE_NODEJS"} {
		if got := GlueType(h); got != want {
			t.Errorf("GlueType(%q) = %q, want %q", h, got, want)
		}
	}
	for c, want := range map[string]string{"": BlockSerial, "allow": BlockSerial, "serial": BlockSerial, "discard": BlockDiscard, "replace": BlockCover,
		"skip": BlockDiscard, "terminate": BlockCover, "cancel": BlockCover, "buffer_all": BlockSerial, "buffer_one": BlockSerial, "at_most": BlockSerial} {
		if got := BlockStrategy(c); got != want {
			t.Errorf("BlockStrategy(%q) = %q, want %q", c, got, want)
		}
	}
	if TimeoutSeconds(0) != 0 || TimeoutSeconds(1) != 1 || TimeoutSeconds(1000) != 1 || TimeoutSeconds(1001) != 2 {
		t.Error("TimeoutSeconds does not round up to whole seconds")
	}
	for _, c := range []struct {
		code int
		msg  string
		want string
	}{{200, "", "succeeded"}, {502, "job execute timeout", "timed_out"}, {500, "scheduling center kill job. [job running, killed]", "canceled"}, {500, "boom", "failed"}} {
		if got := Outcome(c.code, c.msg); got != c.want {
			t.Errorf("Outcome(%d, %q) = %q, want %q", c.code, c.msg, got, c.want)
		}
	}
}
