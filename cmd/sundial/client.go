package main

import (
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"time"

	"github.com/sundial-scheduler/sundial/api"
)

// requestTimeout bounds one non-streaming request, so a hung server fails the command
// instead of hanging the terminal.
const requestTimeout = 30 * time.Second

func newAPIClient(server, token string) (*api.Client, error) {
	c, err := api.NewClient(server, token, api.WithRequestTimeout(requestTimeout))
	if err != nil {
		return nil, usageErrorf("--server %q: want a URL such as http://localhost:8080", server)
	}
	return c, nil
}

var (
	errNotAuthenticated = errors.New("not authenticated: set --token or SUNDIAL_TOKEN")
	// The server does not say why it refused a token, so as not to tell a guesser which
	// tokens exist.
	errTokenRefused = errors.New("the server refused the API token (expired, revoked or unknown): " +
		"check --token or SUNDIAL_TOKEN, or create one with sundial token create --login USER")
)

// cliError turns the client's error into the CLI's: a 400 is bad input (exit status 2) and
// names the server's field; a 401 says the token was refused, or how to authenticate; a refused connection says
// where the CLI looked for the server.
func cliError(c *api.Client, err error) error {
	var ae *api.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the Sundial server at %s (connection refused): is it running? Set --server or SUNDIAL_SERVER", c.BaseURL())
	case !errors.As(err, &ae) || ae.Code == "":
		return err
	}
	switch ae.Status {
	case http.StatusBadRequest:
		return usageError{ae}
	case http.StatusUnauthorized:
		if c.HasToken() {
			return errTokenRefused
		}
		return errNotAuthenticated
	case http.StatusForbidden:
		return fmt.Errorf("permission denied: %s", ae.Message)
	}
	return err
}
