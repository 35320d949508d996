package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// apiClient talks to one Sundial server's REST API with a bearer token. It returns response
// bodies as raw JSON so that `-o json` prints exactly what the server sent.
type apiClient struct {
	base  string // e.g. http://localhost:8080, without a trailing slash
	token string
	http  *http.Client
}

func newAPIClient(server, token string) (*apiClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--server %q: want a URL such as http://localhost:8080", server)
	}
	// No overall timeout: `exec logs -f` streams for as long as the execution runs. Requests
	// are bounded by their context instead.
	return &apiClient{base: strings.TrimRight(server, "/"), token: token, http: &http.Client{}}, nil
}

// apiError is the server's error shape: {"error": {"code", "message", "field"}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *apiError) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

var errNotAuthenticated = errors.New("not authenticated: set --token or SUNDIAL_TOKEN")

// requestTimeout bounds one non-streaming request, so a hung server fails the command
// instead of hanging the terminal.
const requestTimeout = 30 * time.Second

// do sends one request and returns the body of a 2xx response (nil for 204). body, when not
// nil, is sent as JSON.
func (c *apiClient) do(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.send(ctx, method, path, query, body, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	return b, nil
}

// send sends a request and returns a 2xx response with its body open; any other status is
// returned as an error made from the server's error body.
func (c *apiClient) send(ctx context.Context, method, path string, query url.Values, body any, accept string) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("cannot reach the Sundial server at %s (connection refused): is it running? Set --server or SUNDIAL_SERVER", c.base)
		}
		return nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, responseError(method, path, resp)
}

// responseError turns a failed response into the CLI's error: a 400 is bad input (exit
// status 2) and names the server's field; a 401 says how to authenticate.
func responseError(method, path string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var eb struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(b, &eb) != nil || eb.Error == nil || eb.Error.Message == "" {
		// Not our server's error shape (a proxy, or a different service on that port).
		text := strings.TrimSpace(string(b))
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, text)
	}
	ae := eb.Error
	ae.Status = resp.StatusCode
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return usageError{ae}
	case http.StatusUnauthorized:
		return errNotAuthenticated
	case http.StatusForbidden:
		return fmt.Errorf("permission denied: %s", ae.Message)
	}
	return ae
}

// login starts a cookie session with a user's password, for the one call that needs no
// token yet: creating the first token. The session then authenticates this client's
// requests instead of the token.
func (c *apiClient) login(ctx context.Context, user, password string) error {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	c.http.Jar, c.token = jar, ""
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.send(ctx, "POST", "/api/v1/auth/login", nil, map[string]string{"username": user, "password": password}, "application/json")
	if err != nil {
		if errors.Is(err, errNotAuthenticated) {
			return fmt.Errorf("log in as %q: wrong user name or password", user)
		}
		return fmt.Errorf("log in as %q: %w", user, err)
	}
	resp.Body.Close()
	return nil
}
