package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestBatchesShareAWrite checks the group commit: while one batch is written, the requests
// that come meanwhile queue and go in the next batch, one write for all of them; each gets
// its own outcome; a waiter that leaves does not strand the others, and its request is
// written all the same; and the queue ends empty.
func TestBatchesShareAWrite(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	var written []int
	first, release := make(chan struct{}), make(chan struct{})
	b := &Batcher[int, string]{Write: func(_ context.Context, batch []int) ([]string, error) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		written = append(written, batch...)
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		out := make([]string, len(batch))
		for i, x := range batch {
			out[i] = fmt.Sprint("done ", x)
		}
		return out, nil
	}}
	queued, left := make(chan int, 100), make(chan struct{})
	b.queuedHook = func(n int) { queued <- n }
	b.leftHook = func() { close(left) }

	const n = 40
	type out struct {
		res string
		err error
	}
	outs := make([]out, n)
	var wg sync.WaitGroup
	do := func(ctx context.Context, i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.Do(ctx, i)
			outs[i] = out{res, err}
		}()
		<-queued
	}
	do(context.Background(), 0)
	<-first // the first request is written alone, and held there
	leaving, leave := context.WithCancel(context.Background())
	for i := 1; i < n; i++ {
		ctx := context.Background()
		if i == 1 {
			ctx = leaving
		}
		do(ctx, i)
	}
	leave()
	<-left
	close(release)
	wg.Wait()

	if fmt.Sprint(sizes) != fmt.Sprint([]int{1, n - 1}) {
		t.Fatalf("batches %v, want [1 %d]: the requests queued meanwhile share one write", sizes, n-1)
	}
	if len(written) != n {
		t.Errorf("%d requests written, want %d (the one whose waiter left too)", len(written), n)
	}
	for i, o := range outs {
		switch {
		case i == 1:
			if !errors.Is(o.err, context.Canceled) {
				t.Errorf("request %d whose waiter left: %+v, want context.Canceled", i, o)
			}
		case o.err != nil || o.res != fmt.Sprint("done ", i):
			t.Errorf("request %d: %+v", i, o)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writing || len(b.queued) != 0 {
		t.Errorf("after the writes: writing %v, %d queued", b.writing, len(b.queued))
	}
}

// TestBatchBounded checks that a queue longer than Max is written in batches of Max, by the
// waiters in turn, and that a failed write is every request's error.
func TestBatchBounded(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	first, release := make(chan struct{}), make(chan struct{})
	boom := errors.New("boom")
	b := &Batcher[int, int]{Max: 3, Write: func(_ context.Context, batch []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		if batch[0] == 4 {
			return nil, boom
		}
		return batch, nil
	}}
	queued := make(chan int, 100)
	b.queuedHook = func(n int) { queued <- n }
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.Do(context.Background(), i)
		}()
		<-queued
		if i == 0 {
			<-first
		}
	}
	close(release)
	wg.Wait()
	if fmt.Sprint(sizes) != "[1 3 3 1]" {
		t.Errorf("batches %v, want [1 3 3 1]", sizes)
	}
	for i, err := range errs {
		if want := i >= 4 && i <= 6; errors.Is(err, boom) != want {
			t.Errorf("request %d: %v (in the failed batch: %v)", i, err, want)
		}
	}
}

// TestPanickingWriteFailsItsBatchOnly: a Write that panics fails its batch's requests with an
// error, and the next request is written as usual (the batcher is not left marked as writing).
func TestPanickingWriteFailsItsBatchOnly(t *testing.T) {
	calls := 0
	b := &Batcher[int, int]{Write: func(_ context.Context, batch []int) ([]int, error) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return batch, nil
	}}
	if _, err := b.Do(context.Background(), 1); err == nil {
		t.Fatal("the panicking write's request got no error")
	}
	got, err := b.Do(context.Background(), 2)
	if err != nil || got != 2 {
		t.Fatalf("the next request: %d, %v; want 2, nil", got, err)
	}
}
