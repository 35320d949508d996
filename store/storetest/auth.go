package storetest

import (
	"context"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

func testUsers(t *testing.T, s store.Store) {
	ctx := context.Background()
	u := &store.User{Name: "admin", PasswordHash: "$2a$hash", Role: store.RoleAdmin}
	noErr(t, s.UserInsert(ctx, u))
	if u.ID == 0 || u.CreatedAt == 0 {
		t.Fatalf("inserted user: %+v", u)
	}
	// The unique name is what makes the first-start admin creation happen once per cluster.
	wantErr(t, s.UserInsert(ctx, &store.User{Name: "admin", PasswordHash: "x", Role: store.RoleAdmin}), store.ErrAlreadyExists)

	got := get(s.UserGetByName(ctx, "admin")).ok(t)
	if *got != *u {
		t.Fatalf("UserGetByName = %+v, want %+v", got, u)
	}
	equal(t, "UserGet name", get(s.UserGet(ctx, u.ID)).ok(t).Name, "admin")
	_, err := s.UserGetByName(ctx, "nobody")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UserGet(ctx, u.ID+100)
	wantErr(t, err, store.ErrNotFound)

	// A single sign-on user keeps the identity provider's subject it was made with.
	sso := &store.User{Name: "alice", Role: store.RoleOperator, Scope: "app1", SSOSubject: "https://idp.example|abc"}
	noErr(t, s.UserInsert(ctx, sso))
	equal(t, "SSO subject", get(s.UserGetByName(ctx, "alice")).ok(t).SSOSubject, "https://idp.example|abc")

	noErr(t, s.UserSetPassword(ctx, u.ID, "$2a$other"))
	equal(t, "new hash", get(s.UserGet(ctx, u.ID)).ok(t).PasswordHash, "$2a$other")
	wantErr(t, s.UserSetPassword(ctx, u.ID+100, "x"), store.ErrNotFound)
}

func testAPITokens(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := &store.User{Name: "a", PasswordHash: "x", Role: store.RoleAdmin}
	b := &store.User{Name: "b", PasswordHash: "x", Role: store.RoleAdmin}
	noErr(t, s.UserInsert(ctx, a))
	noErr(t, s.UserInsert(ctx, b))

	var aIDs, all []int64
	for i, owner := range []*store.User{a, b, a, a, b} {
		tok := &store.APIToken{UserID: owner.ID, Name: "ci", Hash: string(rune('a'+i)) + "0123456789abcdef", Prefix: "sdl_x", ExpiresAt: int64(i)}
		noErr(t, s.APITokenInsert(ctx, tok))
		if tok.ID == 0 || tok.CreatedAt == 0 {
			t.Fatalf("inserted token: %+v", tok)
		}
		all = append(all, tok.ID)
		if owner == a {
			aIDs = append(aIDs, tok.ID)
		}
	}
	wantErr(t, s.APITokenInsert(ctx, &store.APIToken{UserID: a.ID, Hash: "a0123456789abcdef"}), store.ErrAlreadyExists)
	wantErr(t, s.APITokenInsert(ctx, &store.APIToken{UserID: b.ID + 100, Hash: "zz"}), store.ErrNotFound)

	got := get(s.APITokenGetByHash(ctx, "c0123456789abcdef")).ok(t)
	if got.ID != all[2] || got.UserID != a.ID || got.Name != "ci" || got.Prefix != "sdl_x" || got.ExpiresAt != 2 {
		t.Fatalf("APITokenGetByHash = %+v", got)
	}
	_, err := s.APITokenGetByHash(ctx, "nope")
	wantErr(t, err, store.ErrNotFound)

	// Keyset pages return every token once, per user and overall.
	for _, tc := range []struct {
		user int64
		want []int64
	}{{a.ID, aIDs}, {0, all}} {
		var seen []int64
		after := int64(0)
		for {
			page := get(s.APITokenList(ctx, tc.user, after, 2)).ok(t)
			if len(page) == 0 {
				break
			}
			seen = append(seen, ids(page, func(t *store.APIToken) int64 { return t.ID })...)
			after = page[len(page)-1].ID
		}
		sameIDs(t, "token pages", seen, tc.want)
		equal(t, "token count", len(seen), len(tc.want))
	}

	noErr(t, s.APITokenDelete(ctx, all[0]))
	wantErr(t, s.APITokenDelete(ctx, all[0]), store.ErrNotFound)
	_, err = s.APITokenGetByHash(ctx, "a0123456789abcdef")
	wantErr(t, err, store.ErrNotFound)
}

func testSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	u := &store.User{Name: "u", PasswordHash: "x", Role: store.RoleAdmin}
	noErr(t, s.UserInsert(ctx, u))
	for i, exp := range []int64{1000, 2000, 3000} {
		sess := &store.Session{Hash: string(rune('a' + i)), UserID: u.ID, ExpiresAt: exp}
		noErr(t, s.SessionInsert(ctx, sess))
		if sess.CreatedAt == 0 {
			t.Fatalf("inserted session: %+v", sess)
		}
	}
	wantErr(t, s.SessionInsert(ctx, &store.Session{Hash: "a", UserID: u.ID, ExpiresAt: 1}), store.ErrAlreadyExists)
	wantErr(t, s.SessionInsert(ctx, &store.Session{Hash: "z", UserID: u.ID + 100, ExpiresAt: 1}), store.ErrNotFound)

	got := get(s.SessionGet(ctx, "b")).ok(t)
	if got.UserID != u.ID || got.ExpiresAt != 2000 {
		t.Fatalf("SessionGet = %+v", got)
	}
	equal(t, "expired at 2000", get(s.SessionsDeleteExpired(ctx, 2000)).ok(t), int64(2))
	_, err := s.SessionGet(ctx, "a")
	wantErr(t, err, store.ErrNotFound)
	get(s.SessionGet(ctx, "c")).ok(t)
	noErr(t, s.SessionDelete(ctx, "c"))
	wantErr(t, s.SessionDelete(ctx, "c"), store.ErrNotFound)
}
