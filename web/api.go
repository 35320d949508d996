package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
)

// apiError is the REST API's error answer: its message is what the console shows, at the
// field it names.
type apiError = api.Error

// apiResult is a successful API answer.
type apiResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// call sends one request to the REST API in-process, as the browser's request r: with its
// cookies (the session), its address and TLS state, and its context. It returns the API's
// error for an answer of 400 or more.
func (c *Console) call(r *http.Request, method, path string, body any) (*apiResult, error) {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("web: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, path, rd)
	if err != nil {
		return nil, fmt.Errorf("web: %s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// The session, and what a trusted proxy says of the client (TLS: the cookie's Secure).
	for _, h := range []string{"Cookie", "X-Forwarded-Proto", "X-Forwarded-For"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.RemoteAddr, req.TLS, req.Host = r.RemoteAddr, r.TLS, r.Host
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.api.ServeHTTP(rec, req)
	if rec.status >= 400 {
		var eb api.ErrorBody
		if err := json.Unmarshal(rec.body.Bytes(), &eb); err != nil || eb.Error.Code == "" {
			return nil, fmt.Errorf("web: %s %s: status %d: %s", method, path, rec.status, strings.TrimSpace(rec.body.String()))
		}
		eb.Error.Status = rec.status
		return nil, &eb.Error
	}
	return &apiResult{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}, nil
}

// callJSON is call decoding the answer into out.
func (c *Console) callJSON(r *http.Request, method, path string, body, out any) error {
	res, err := c.call(r, method, path, body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.Body, out); err != nil {
		return fmt.Errorf("web: decode %s %s: %w", method, path, err)
	}
	return nil
}

// recorder is the ResponseWriter of an in-process API call.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (rw *recorder) Header() http.Header { return rw.header }

func (rw *recorder) WriteHeader(status int) {
	if !rw.wroteHeader {
		rw.status, rw.wroteHeader = status, true
	}
}

func (rw *recorder) Write(b []byte) (int, error) {
	rw.WriteHeader(http.StatusOK)
	return rw.body.Write(b)
}
