package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
	"golang.org/x/crypto/bcrypt"

	"github.com/sundial-scheduler/sundial/store"
)

// Password rules: at least minPassword characters, and a strength score of at least
// minPasswordScore from zxcvbn (0 to 4: 3 is "safely unguessable" against an offline attack
// on a slow hash), which finds dictionary words, names, keyboard walks, repeats, sequences
// and dates, and the user's own name, where a homemade rule would count character classes.
const (
	minPassword      = 12
	minPasswordScore = 3
)

// checkPassword refuses a password too short or too guessable, naming field. userInputs are
// words the password must not lean on (the user name).
func checkPassword(field, pw string, userInputs ...string) error {
	if n := utf8.RuneCountInString(pw); n < minPassword {
		return invalidField(field, "must have at least %d characters, got %d", minPassword, n)
	}
	if len(pw) > 72 {
		return invalidField(field, "must have at most 72 bytes (bcrypt's limit)")
	}
	res := zxcvbn.PasswordStrength(pw, append(userInputs, "sundial"))
	if res.Score < minPasswordScore {
		return invalidField(field, "is too easy to guess (strength %d of 4, need %d): avoid words, names, "+
			"repeats and keyboard patterns, or use a longer passphrase", res.Score, minPasswordScore)
	}
	return nil
}

// randomPassword is a generated password: 144 random bits, which checkPassword accepts.
func randomPassword() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashPassword checks a new password of the user name and hashes it, within the cap on
// concurrent bcrypt work that logins share.
func (s *Server) hashPassword(ctx context.Context, field, pw, name string) (string, error) {
	if err := checkPassword(field, pw, name); err != nil {
		return "", err
	}
	var hash []byte
	var herr error
	if err := s.logins.hash(ctx, func() { hash, herr = bcrypt.GenerateFromPassword([]byte(pw), s.auth.cost) }); err != nil {
		return "", err
	}
	if herr != nil {
		return "", invalidField(field, "%v", herr)
	}
	return string(hash), nil
}

// setPassword checks and stores u's new password and ends the user's sessions but keep (the
// caller's own, when they change their own password), in one transaction with the audit
// entry ctx carries.
func (s *Server) setPassword(ctx context.Context, u *store.User, field, pw, keep string) error {
	hash, err := s.hashPassword(ctx, field, pw, u.Name)
	if err != nil {
		return err
	}
	return store.InTx(ctx, s.store, func(q store.Querier) error {
		if err := q.UserSetPassword(ctx, u.ID, hash); err != nil {
			return err
		}
		_, err := q.SessionsDeleteUser(ctx, u.ID, keep)
		return err
	})
}
