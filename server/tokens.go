package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// msTime is a stored time (Unix ms, 0 for none) as the API shows it: RFC 3339 in UTC with
// milliseconds, or null.
type msTime int64

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func (t msTime) MarshalJSON() ([]byte, error) {
	if t == 0 {
		return []byte("null"), nil
	}
	return []byte(`"` + time.UnixMilli(int64(t)).UTC().Format(timeLayout) + `"`), nil
}

// UnmarshalJSON reads what MarshalJSON writes (Go clients of the API and the tests use it).
func (t *msTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = 0
		return nil
	}
	v, err := time.Parse(`"`+time.RFC3339Nano+`"`, string(b))
	if err != nil {
		return err
	}
	*t = msTime(v.UnixMilli())
	return nil
}

// parseTime reads an RFC 3339 time from input field.
func parseTime(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalidField(field, "want an RFC 3339 time such as 2024-06-01T09:00:00Z, got %q", v)
	}
	return t, nil
}

type tokenRequest struct {
	Name string `json:"name"`
	// ExpiresAt (RFC 3339) is optional; a token without it works until it is deleted.
	ExpiresAt string `json:"expires_at"`
}

type tokenJSON struct {
	ID        int64  `json:"id"`
	UserID    int64  `json:"user_id"`
	Name      string `json:"name"`
	Prefix    string `json:"prefix"`
	CreatedAt msTime `json:"created_at"`
	ExpiresAt msTime `json:"expires_at"`
	// Token is the secret, present only in the response that created it.
	Token string `json:"token,omitempty"`
}

func tokenOut(t *store.APIToken) tokenJSON {
	return tokenJSON{ID: t.ID, UserID: t.UserID, Name: t.Name, Prefix: t.Prefix, CreatedAt: msTime(t.CreatedAt),
		ExpiresAt: msTime(t.ExpiresAt)}
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req tokenRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return invalidField("name", "must not be empty: say what the token is for")
	}
	var exp int64
	if req.ExpiresAt != "" {
		t, err := parseTime("expires_at", req.ExpiresAt)
		if err != nil {
			return err
		}
		if !t.After(time.Now()) {
			return invalidField("expires_at", "%s is in the past", req.ExpiresAt)
		}
		exp = t.UnixMilli()
	}
	secret, hash := newSecret(tokenPrefix)
	tok := &store.APIToken{UserID: principalFrom(r.Context()).user.ID, Name: req.Name, Hash: hash,
		Prefix: secret[:len(tokenPrefix)+6], ExpiresAt: exp}
	if err := s.store.APITokenInsert(r.Context(), tok); err != nil {
		return err
	}
	s.log.Info("api token created", "token", tok.ID, "name", tok.Name, "by", principalFrom(r.Context()).user.Name)
	out := tokenOut(tok)
	out.Token = secret
	httpserve.NoStore(w)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	limit, err := pageLimit(r)
	if err != nil {
		return err
	}
	after, err := queryID(r, "after")
	if err != nil {
		return err
	}
	toks, err := s.store.APITokenList(r.Context(), 0, after, limit+1)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, paginate(toks, limit, func(t *store.APIToken) string { return strconv.FormatInt(t.ID, 10) }, tokenOut))
	return nil
}

func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.store.APITokenDelete(r.Context(), id); err != nil {
		return err
	}
	s.log.Info("api token deleted", "token", id, "by", principalFrom(r.Context()).user.Name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
