package storetest

import (
	"context"
	"testing"

	"github.com/sundial-scheduler/sundial/store"
)

// testUserRoles covers roles, scopes, the scripts permission, disabling, reset tokens, token
// permissions and last use, and ending a user's other sessions.
func testUserRoles(t *testing.T, s store.Store) {
	ctx := context.Background()
	admin := &store.User{Name: "root", PasswordHash: "x", Role: store.RoleAdmin}
	noErr(t, s.UserInsert(ctx, admin))
	equal(t, "default scope", get(s.UserGet(ctx, admin.ID)).ok(t).Scope, store.ScopeAll)
	op := &store.User{Name: "op", PasswordHash: "x", Role: store.RoleOperator, Scope: "billing,mail", Scripts: true}
	noErr(t, s.UserInsert(ctx, op))
	got := get(s.UserGet(ctx, op.ID)).ok(t)
	if got.Role != store.RoleOperator || got.Scope != "billing,mail" || !got.Scripts || got.Disabled {
		t.Fatalf("operator as stored: %+v", got)
	}

	list := get(s.UserList(ctx, 0, 10)).ok(t)
	if len(list) != 2 || list[0].ID != admin.ID || list[1].ID != op.ID {
		t.Fatalf("UserList = %+v", list)
	}
	equal(t, "UserList after", len(get(s.UserList(ctx, admin.ID, 10)).ok(t)), 1)

	got.Role, got.Scope, got.Scripts, got.Disabled = store.RoleViewer, "mail", false, true
	got.ResetHash, got.ResetExpiresAt = "reset-hash", 99
	noErr(t, s.UserUpdate(ctx, got))
	again := get(s.UserGet(ctx, op.ID)).ok(t)
	if again.Role != store.RoleViewer || again.Scope != "mail" || again.Scripts || !again.Disabled || again.ResetExpiresAt != 99 {
		t.Fatalf("updated user: %+v", again)
	}
	equal(t, "by reset hash", get(s.UserGetByResetHash(ctx, "reset-hash")).ok(t).ID, op.ID)
	_, err := s.UserGetByResetHash(ctx, "")
	wantErr(t, err, store.ErrNotFound)
	// A new password uses up the reset token.
	noErr(t, s.UserSetPassword(ctx, op.ID, "y"))
	_, err = s.UserGetByResetHash(ctx, "reset-hash")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.UserUpdate(ctx, &store.User{ID: op.ID + 100, Role: store.RoleViewer}), store.ErrNotFound)

	tok := &store.APIToken{UserID: op.ID, Name: "ci", Hash: "roles-token", Role: store.RoleViewer, Scope: "mail"}
	noErr(t, s.APITokenInsert(ctx, tok))
	gt := get(s.APITokenGetByHash(ctx, "roles-token")).ok(t)
	if gt.Role != store.RoleViewer || gt.Scope != "mail" || gt.Scripts || gt.LastUsedAt != 0 {
		t.Fatalf("token as stored: %+v", gt)
	}
	noErr(t, s.APITokenTouch(ctx, tok.ID, 1_000_000, 60_000))
	equal(t, "last use", get(s.APITokenGetByHash(ctx, "roles-token")).ok(t).LastUsedAt, int64(1_000_000))
	// Within the interval the first use stands.
	noErr(t, s.APITokenTouch(ctx, tok.ID, 1_030_000, 60_000))
	equal(t, "last use within a minute", get(s.APITokenGetByHash(ctx, "roles-token")).ok(t).LastUsedAt, int64(1_000_000))
	noErr(t, s.APITokenTouch(ctx, tok.ID, 1_060_000, 60_000))
	equal(t, "last use a minute on", get(s.APITokenGetByHash(ctx, "roles-token")).ok(t).LastUsedAt, int64(1_060_000))

	for _, h := range []string{"s1", "s2", "s3"} {
		noErr(t, s.SessionInsert(ctx, &store.Session{Hash: h, UserID: op.ID, ExpiresAt: 1 << 50}))
	}
	noErr(t, s.SessionInsert(ctx, &store.Session{Hash: "s-admin", UserID: admin.ID, ExpiresAt: 1 << 50}))
	equal(t, "sessions ended", get(s.SessionsDeleteUser(ctx, op.ID, "s2")).ok(t), int64(2))
	get(s.SessionGet(ctx, "s2")).ok(t)
	get(s.SessionGet(ctx, "s-admin")).ok(t)
	_, err = s.SessionGet(ctx, "s1")
	wantErr(t, err, store.ErrNotFound)
}

// testAudit covers the audit log: insertion in a transaction, filters, newest-first keyset
// paging and the retention sweep.
func testAudit(t *testing.T, s store.Store) {
	ctx := context.Background()
	// An entry written in a rolled-back transaction is gone with the change it described.
	tx, err := s.Begin(ctx)
	noErr(t, err)
	noErr(t, tx.AuditInsert(ctx, &store.AuditEntry{Action: "job.create", Target: "gone"}))
	noErr(t, tx.Rollback())
	equal(t, "rolled back", len(get(s.AuditList(ctx, store.AuditFilter{})).ok(t)), 0)

	var ids []int64
	for i, e := range []store.AuditEntry{
		{At: 100, Actor: "alice", Source: "10.0.0.1:5000", Action: "job.create", TargetKind: "job", Target: "1", App: "billing", After: `{"name":"a"}`},
		{At: 200, Actor: "bob", Action: "job.update", TargetKind: "job", Target: "1", Before: `{"name":"a"}`, After: `{"name":"b"}`},
		{At: 300, Actor: "alice", Action: "auth.login_failed", TargetKind: "user", Target: "mallory"},
		{At: 400, Actor: "alice", Action: "job.delete", TargetKind: "job", Target: "2"},
	} {
		tx, err := s.Begin(ctx)
		noErr(t, err)
		e := e
		noErr(t, tx.AuditInsert(ctx, &e))
		noErr(t, tx.Commit())
		if e.ID == 0 {
			t.Fatalf("entry %d: no id", i)
		}
		ids = append(ids, e.ID)
	}
	all := get(s.AuditList(ctx, store.AuditFilter{})).ok(t)
	if len(all) != 4 || all[0].ID != ids[3] || all[3].ID != ids[0] {
		t.Fatalf("AuditList newest first: %+v", all)
	}
	if e := all[2]; e.Actor != "bob" || e.Before != `{"name":"a"}` || e.After != `{"name":"b"}` || e.At != 200 {
		t.Fatalf("update entry: %+v", e)
	}
	if e := all[3]; e.Source != "10.0.0.1:5000" || e.App != "billing" {
		t.Fatalf("create entry: %+v", e)
	}
	count := func(f store.AuditFilter) int { return len(get(s.AuditList(ctx, f)).ok(t)) }
	equal(t, "by actor", count(store.AuditFilter{Actor: "alice"}), 3)
	equal(t, "by action", count(store.AuditFilter{Action: "auth.login_failed"}), 1)
	equal(t, "by target", count(store.AuditFilter{TargetKind: "job", Target: "1"}), 2)
	equal(t, "by time", count(store.AuditFilter{From: 200, To: 400}), 2)
	page := get(s.AuditList(ctx, store.AuditFilter{Limit: 2})).ok(t)
	next := get(s.AuditList(ctx, store.AuditFilter{Limit: 2, BeforeID: page[1].ID})).ok(t)
	if len(page) != 2 || len(next) != 2 || next[0].ID != ids[1] || next[1].ID != ids[0] {
		t.Fatalf("pages: %+v then %+v", page, next)
	}
	// Stamped by the store when the caller leaves At unset.
	now := &store.AuditEntry{Action: "settings.update"}
	noErr(t, s.AuditInsert(ctx, now))
	if now.At == 0 {
		t.Fatalf("At not stamped: %+v", now)
	}

	equal(t, "swept", get(s.AuditDeleteBefore(ctx, 300, 1)).ok(t), int64(1))
	equal(t, "swept rest", get(s.AuditDeleteBefore(ctx, 300, 10)).ok(t), int64(1))
	equal(t, "kept", count(store.AuditFilter{}), 3)
}
