package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sundial-scheduler/sundial/clock"
	"github.com/sundial-scheduler/sundial/internal/execsign"
	"github.com/sundial-scheduler/sundial/store"
)

// The cluster's key pair that signs every call to an executor (package execsign). It lives in
// the database, so every node of the cluster signs with the same key and every executor
// trusts one key whichever node it registered with. The first node that needs it makes it.
//
// Rotation adds the next generation (RotateClusterKey). Executors are given the public keys of
// the two newest generations with each heartbeat answer; nodes keep signing with the older
// of the two until the newer is a few heartbeats old, so that every executor has heard of it
// before the first call it signs arrives.

// PublishedKeys is how many generations executors are given: the newest, and the one before
// it while a rotation settles.
const PublishedKeys = 2

// keyring caches the cluster keys for a heartbeat interval (at most a minute): a rotation
// reaches every node within that.
type keyring struct {
	st       store.Store
	clk      clock.Clock
	interval time.Duration // the executors' heartbeat interval

	mu      sync.Mutex
	keys    []*store.ClusterKey // newest first, at most PublishedKeys
	signers map[int64]*execsign.Signer
	fetched time.Time
}

func (k *keyring) load(ctx context.Context) ([]*store.ClusterKey, error) {
	now := k.clk.Now()
	k.mu.Lock()
	if len(k.keys) > 0 && now.Sub(k.fetched) < min(k.interval, time.Minute) {
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	}
	k.mu.Unlock()
	keys, err := k.st.ClusterKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the cluster keys: %w", err)
	}
	if len(keys) == 0 {
		if _, err := addClusterKey(ctx, k.st, 1, now); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return nil, err
		}
		// Another node may have made generation 1 first: its key is the cluster's.
		if keys, err = k.st.ClusterKeys(ctx); err != nil {
			return nil, fmt.Errorf("read the cluster keys: %w", err)
		}
		if len(keys) == 0 {
			return nil, errors.New("the cluster key was created and is not there")
		}
	}
	keys = keys[:min(len(keys), PublishedKeys)]
	signers := make(map[int64]*execsign.Signer, len(keys))
	for _, key := range keys {
		s, err := execsign.NewSigner(key.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("cluster key generation %d: %w", key.Generation, err)
		}
		signers[key.Generation] = s
	}
	k.mu.Lock()
	k.keys, k.signers, k.fetched = keys, signers, now
	k.mu.Unlock()
	return keys, nil
}

// signer is the key calls are signed with: the newest generation once executors have had
// LiveIntervals heartbeats (plus the cache's own delay) to learn it, the one before until then.
func (k *keyring) signer(ctx context.Context) (*execsign.Signer, error) {
	keys, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	use := keys[0]
	settle := (LiveIntervals + 1) * k.interval
	if len(keys) > 1 && k.clk.Now().UnixMilli()-use.CreatedAt < settle.Milliseconds() {
		use = keys[1]
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.signers[use.Generation], nil
}

// public lists the public keys executors are to trust, newest first.
func (k *keyring) public(ctx context.Context) ([]string, error) {
	keys, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(keys))
	for i, key := range keys {
		out[i] = key.PublicKey
	}
	return out, nil
}

// ClusterKeys returns the public keys executors are to trust (the register answer carries
// them), making the cluster's first key if there is none.
func (r *Remote) ClusterKeys(ctx context.Context) ([]string, error) { return r.keys.public(ctx) }

// RotateClusterKey adds the next generation of the cluster key, made now. Nodes sign with it
// once executors have had time to learn it (see the top of this file); the generation before
// stays trusted until the next rotation. Rotating twice within that time leaves executors
// without the key nodes sign with for a moment, so wait (LiveIntervals+1) heartbeat
// intervals between rotations.
func RotateClusterKey(ctx context.Context, st store.Store, now time.Time) (*store.ClusterKey, error) {
	keys, err := st.ClusterKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the cluster keys: %w", err)
	}
	next := int64(1)
	if len(keys) > 0 {
		next = keys[0].Generation + 1
	}
	return addClusterKey(ctx, st, next, now)
}

func addClusterKey(ctx context.Context, st store.Store, generation int64, now time.Time) (*store.ClusterKey, error) {
	priv, pub, err := execsign.NewKey()
	if err != nil {
		return nil, err
	}
	k := &store.ClusterKey{Generation: generation, PublicKey: pub, PrivateKey: priv, CreatedAt: now.UnixMilli()}
	if err := st.ClusterKeyCreate(ctx, k); err != nil {
		return nil, fmt.Errorf("store cluster key generation %d: %w", generation, err)
	}
	return k, nil
}
