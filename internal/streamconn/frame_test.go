package streamconn

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/sundial-scheduler/sundial/executor/wire"
)

// sampleFrame is a full frame's calls and a few replies, with bodies the size of a run
// request.
func sampleFrame() ([]wire.StreamCall, []wire.StreamReply) {
	calls := make([]wire.StreamCall, maxFrameCalls)
	for i := range calls {
		body := fmt.Sprintf(`{"jobId":%d,"executorHandler":"shell","executorParams":"--region eu <x> & \"q\"","executorBlockStrategy":"SERIAL_EXECUTION","executorTimeout":0,"logId":%d,"logDateTime":1764400000000,"glueType":"BEAN","broadcastIndex":0,"broadcastTotal":1,"fire":{"trigger":12,"scheduledAt":1764400000000,"life":"n1.2"}}`, i, 1_000_000+i)
		calls[i] = wire.StreamCall{ID: uint64(i + 1), Path: "/run", Body: wire.RawJSON(body)}
	}
	replies := []wire.StreamReply{{ID: 7, Status: 200, Body: `{"code":200,"msg":null}`}, {ID: 8, Status: 500, Body: `"no such job \u00e9"`}, {ID: 9, Status: 204}}
	return calls, replies
}

// TestFrameEncoding: a frame written by the peer reads back as the calls, signature and
// replies it was given, the signature covers the calls' bytes as they appear in the frame,
// and a frame of only replies or only calls has nothing else.
func TestFrameEncoding(t *testing.T) {
	calls, replies := sampleFrame()
	calls = append(calls[:2], wire.StreamCall{ID: 99, Path: "/odd \"path\"\n", Body: `[1, 2]`}, wire.StreamCall{ID: 100, Path: "/beat"})
	for _, c := range []struct {
		name    string
		calls   []wire.StreamCall
		replies []wire.StreamReply
		sign    bool
	}{{"calls, signed, and replies", calls, replies, true}, {"calls only", calls, nil, false}, {"replies only", nil, replies, true}} {
		t.Run(c.name, func(t *testing.T) {
			var frame []byte
			var signed string
			cfg := Config{Write: func(_ context.Context, b []byte) error { frame = b; return nil }}
			if c.sign {
				cfg.Sign = func(b []byte) (string, error) { signed = string(b); return "sig/+=", nil }
			}
			if err := New(cfg).writeFrame(context.Background(), c.calls, c.replies); err != nil {
				t.Fatal(err)
			}
			var f wire.StreamFrame
			if err := json.Unmarshal(frame, &f); err != nil {
				t.Fatalf("frame %s: %v", frame, err)
			}
			var gotCalls []wire.StreamCall
			if f.Calls != "" {
				if err := json.Unmarshal([]byte(f.Calls), &gotCalls); err != nil {
					t.Fatalf("calls %s: %v", f.Calls, err)
				}
			}
			if !equalJSON(t, gotCalls, c.calls) || !equalJSON(t, f.Replies, c.replies) {
				t.Errorf("frame %s: read back calls %v and replies %v, want %v and %v", frame, gotCalls, f.Replies, c.calls, c.replies)
			}
			switch {
			case c.sign && len(c.calls) > 0 && (f.Signature != "sig/+=" || signed != string(f.Calls)):
				t.Errorf("signature %q over %q, want sig/+= over the frame's calls %q", f.Signature, signed, f.Calls)
			case (!c.sign || len(c.calls) == 0) && f.Signature != "":
				t.Errorf("signature %q on a frame with nothing signed", f.Signature)
			}
		})
	}
}

// equalJSON compares two values by their decoded JSON, so that bodies that differ only in
// spacing or escaping are equal.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// BenchmarkWriteFrame encodes and signs (with a no-op signer) one full frame of run calls.
func BenchmarkWriteFrame(b *testing.B) {
	calls, replies := sampleFrame()
	p := New(Config{Write: func(context.Context, []byte) error { return nil }, Sign: func([]byte) (string, error) { return "sig", nil }})
	b.ReportAllocs()
	for b.Loop() {
		if err := p.writeFrame(context.Background(), calls, replies); err != nil {
			b.Fatal(err)
		}
	}
}
