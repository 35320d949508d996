package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/httpserve"
	"github.com/sundial-scheduler/sundial/store"
)

// parseTime reads an RFC 3339 time from input field.
func parseTime(field, v string) (time.Time, error) { return api.ParseTime(field, v) }

func tokenOut(t *store.APIToken) api.Token {
	return api.Token{ID: t.ID, UserID: t.UserID, Name: t.Name, Prefix: t.Prefix, CreatedAt: api.Time(t.CreatedAt),
		ExpiresAt: api.Time(t.ExpiresAt)}
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	var req api.TokenRequest
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
