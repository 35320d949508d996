package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// odd is text with what a decoder can get wrong: escapes, quotes, non-ASCII, a surrogate
// pair, HTML characters encoding/json escapes.
const odd = "é\n\t\"quoted\" \\ <a&b> \u2028 😀 \x01"

func sampleRun(id int64) RunRequest {
	return RunRequest{ExecutionID: id, JobID: 42, Handler: "shell", Params: "echo " + odd, TimeoutMs: 30000,
		Concurrency: "allow", ShardIndex: 1, ShardTotal: 3, ScheduledAt: 1764400000000, Attempt: 2, TriggerID: 99,
		FiredAt: 1764400000003, IdempotencyKey: "42-99-1764400000000-1", ParamsSecret: true, Instance: "fc6775e6",
		IntervalStart: 1764399940000, IntervalEnd: 1764400000000, BackfillID: 7, FireZone: "Europe/Paris",
		WorkflowInput: `{"run_id":3,"node":"load","params":{"day":"2026-11-29"},"parents":{"extract":[1,2.5,null,true]}}`, MaxConcurrent: 4}
}

// TestDecodeAsEncodingJSON decodes what encoding/json wrote of every kind of value that
// crosses the executor protocol, with both decoders, and wants the same values: Decode is a
// faster decoder, not another reading of the protocol. Malformed input fails in both.
func TestDecodeAsEncodingJSON(t *testing.T) {
	run, err := json.Marshal(sampleRun(1))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := json.Marshal([]StreamCall{{ID: 1, Path: "/run", Body: RawJSON(run)}, {ID: 2, Path: "/beat", Body: "{}"}, {ID: 3, Path: "/kill"}})
	if err != nil {
		t.Fatal(err)
	}
	values := []any{
		sampleRun(1), RunRequest{ExecutionID: 2}, RunResponse{Accepted: true}, RunResponse{Message: odd, Instance: "x"},
		StreamFrame{Calls: RawJSON(calls), Signature: "v1;k=abc;sig=" + odd,
			Replies: []StreamReply{{ID: 9, Status: 200, Body: `{"accepted":true}`}, {ID: 10, Status: 421, Body: `{"reason":"wrong_instance"}`}, {ID: 11, Status: 500}}},
		StreamFrame{}, []StreamCall{}, KillRequest{ExecutionID: 5}, KillResponse{Killed: true, Instance: "i"}, BeatResponse{Instance: odd},
		IdleBeatRequest{JobID: 3}, IdleBeatResponse{Idle: true},
		Registration{App: "billing", Address: "stream://x", Instance: "i", Version: "1", Handlers: []string{"a", odd}, Held: []int64{1, 1 << 60}},
		RegisterResponse{HeartbeatIntervalMs: 1000, ClusterKeys: []string{"k1", "k2"}},
		Misdirected{Reason: MisdirectedInstance, App: "a", Instance: "i", Message: odd},
		ResultBatch{Results: []Result{{ExecutionID: 1, State: StateSucceeded, Code: 200, Message: odd, StartedAt: 1, FinishedAt: 2, LinesLost: 3, Result: `{"rows":10}`}}},
		LogBatch{ExecutionID: 1, Lines: []LogLine{{Line: 1, At: 2, Message: odd}}},
	}
	for _, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		std, fast := reflect.New(reflect.TypeOf(v)), reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(data, std.Interface()); err != nil {
			t.Fatal(err)
		}
		if err := Decode(data, fast.Interface()); err != nil {
			t.Fatalf("Decode(%s): %v", data, err)
		}
		if !reflect.DeepEqual(std.Elem().Interface(), fast.Elem().Interface()) {
			t.Errorf("%T from %s:\nencoding/json %+v\nDecode        %+v", v, data, std.Elem().Interface(), fast.Elem().Interface())
		}
		if !reflect.DeepEqual(fast.Elem().Interface(), v) {
			t.Errorf("%T did not survive the round trip: %+v, want %+v", v, fast.Elem().Interface(), v)
		}
	}
	for _, bad := range []string{``, `{`, `{"execution_id":"1"}`, `{"execution_id":1}x`, `[{"id":1,"path":"/run","body":}]`, `{"handler":"\x01"}`} {
		var a, b RunRequest
		errStd, errFast := json.Unmarshal([]byte(bad), &a), Decode([]byte(bad), &b)
		if errStd == nil || errFast == nil {
			t.Errorf("%q: encoding/json %v, Decode %v; want both to fail", bad, errStd, errFast)
		}
	}
}

// BenchmarkDecode decodes a frame of 500 run calls and each run request in it, the
// executor's work per frame, with encoding/json and with Decode.
func BenchmarkDecode(b *testing.B) {
	var calls []StreamCall
	for i := range 500 {
		body, _ := json.Marshal(sampleRun(int64(i)))
		calls = append(calls, StreamCall{ID: uint64(i), Path: "/run", Body: RawJSON(body)})
	}
	data, _ := json.Marshal(calls)
	frame, _ := json.Marshal(StreamFrame{Calls: RawJSON(data), Signature: "sig"})
	for _, d := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"encoding-json", json.Unmarshal}, {"wire", Decode}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var f StreamFrame
				var cs []StreamCall
				if err := d.decode(frame, &f); err != nil {
					b.Fatal(err)
				}
				if err := d.decode([]byte(f.Calls), &cs); err != nil {
					b.Fatal(err)
				}
				for _, c := range cs {
					var r RunRequest
					if err := d.decode([]byte(c.Body), &r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
