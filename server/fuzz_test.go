package server

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/executor/wire"
	"github.com/sundial-scheduler/sundial/schedule"
)

// requestTypes are the bodies every API route and the server's side of the executor
// protocol decode, in the order FuzzRequestDecoders picks them by its first byte.
var requestTypes = []func() any{
	func() any { return new(api.JobRequest) }, func() any { return new(api.TriggerRequest) },
	func() any { return new(api.CalendarRequest) }, func() any { return new(api.AppRequest) },
	func() any { return new(api.TokenRequest) }, func() any { return new(api.LoginRequest) },
	func() any { return new(api.PasswordRequest) }, func() any { return new(wire.Registration) }, func() any { return new(wire.LogBatch) },
	func() any { return new(wire.ResultBatch) },
}

// want400 fails unless err is nil or the API's 400: anything else would answer 500.
func want400(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("want a 400 apiError, got %T %v", err, err)
	}
}

// FuzzRequestDecoders: any body, for any request type, decodes or is a 400; what decodes
// passes the pure validation or is a 400 too.
func FuzzRequestDecoders(f *testing.F) {
	for i, seed := range []string{
		`{"name":"j","handler":"noop","max_retries":3,"triggers":[{"cron":"0 0 * * * ?"}]}`,
		`{"name":"t","every_ms":1000,"repeat":-1,"priority":5}`, `{"spec":"weekly:1,7","base":"b"}`,
		`{"address_mode":"manual","addresses":["http://h:1"]}`, `{"name":"ci","expires_at":"2030-01-01T00:00:00Z"}`,
		`{"username":"admin","password":"p"}`, `{"current_password":"a","new_password":"b"}`,
		`{"app":"a","address":"http://h:1","handlers":["x"]}`, `{"execution_id":1,"lines":[{"line":1,"at":1,"message":"m"}]}`,
		`{"results":[{"execution_id":1,"state":"succeeded","code":200}]}`,
	} {
		f.Add(byte(i), []byte(seed))
	}
	f.Add(byte(0), []byte(`{"name":"a\u0000","max_retries":2147483648}`))
	f.Fuzz(func(t *testing.T, kind byte, body []byte) {
		v := requestTypes[int(kind)%len(requestTypes)]()
		r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		err := decode(r, v)
		want400(t, err)
		if err != nil {
			return
		}
		switch in := v.(type) {
		case *api.TriggerRequest:
			_, err = triggerOf(in)
			if err != nil {
				if _, ok := schedule.AsField(err); !ok {
					t.Fatalf("trigger: want a FieldError, got %T %v", err, err)
				}
				err = nil
			}
		case *wire.Registration:
			err = validRegistration(in, true, "")
		}
		want400(t, err)
	})
}

// FuzzScheduleJSON: any schedule body is built or refused with a 400, and a built one
// computes its first fires without panicking.
func FuzzScheduleJSON(f *testing.F) {
	for _, seed := range []string{`{"cron":"0 15 10 ? * MON-FRI"}`, `{"every_ms":60000,"repeat":3}`, `{"once":true}`,
		`{"calendar_interval":{"interval":2,"unit":"week"}}`,
		`{"daily_interval":{"from":"09:00","to":"17:00","interval":30,"unit":"minute","days":"MON-FRI"}}`,
		`{"cron":"0 0 12 L-3 * ?","time_zone":"Europe/Berlin"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var sj api.Schedule
		if err := decode(httptest.NewRequest("POST", "/", bytes.NewReader(body)), &sj); err != nil {
			want400(t, err)
			return
		}
		sched, err := sj.Build()
		if err != nil {
			if _, ok := schedule.AsField(err); !ok {
				t.Fatalf("%s: want a FieldError, got %T %v", body, err, err)
			}
			return
		}
		tr := &schedule.Trigger{Schedule: sched, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		if tr.Validate() != nil {
			return
		}
		at, err := tr.ComputeFirst(nil)
		for range 5 {
			if err != nil || at.IsZero() {
				return
			}
			next, ok := tr.FireTimeAfter(at)
			if ok && !next.After(at) {
				t.Fatalf("%s: fire time %v after %v", body, next, at)
			}
			at, err = next, nil
			if !ok {
				return
			}
		}
	})
}
