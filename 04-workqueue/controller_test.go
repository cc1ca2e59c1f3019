package main

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRetryThenForget: a key whose sync fails comes back, once per failure,
// each time counted; the success that follows resets its count.
func TestRetryThenForget(t *testing.T) {
	calls := 0
	c := newController("things", func(context.Context, string) error {
		calls++
		if calls <= 3 {
			return fmt.Errorf("failure %d", calls)
		}
		return nil
	})
	defer c.queue.ShutDown()
	c.queue.Add("ns/a")
	for i := 1; i <= 3; i++ {
		c.processNextWorkItem(context.Background()) // fails, re-added after a wait
		if got := c.queue.NumRequeues("ns/a"); got != i {
			t.Fatalf("after failure %d: NumRequeues = %d", i, got)
		}
	}
	c.processNextWorkItem(context.Background()) // blocks until the retry is due, then succeeds
	if calls != 4 {
		t.Errorf("syncHandler ran %d times, want 4 (3 failures, 1 success)", calls)
	}
	if got := c.queue.NumRequeues("ns/a"); got != 0 {
		t.Errorf("after the success NumRequeues = %d, want 0 (Forget)", got)
	}
}

// TestBackoffGrows: the waits the limiter hands out double per failure of
// one key, and another key starts at the shortest wait.
func TestBackoffGrows(t *testing.T) {
	l := newRateLimiter()
	var waits []string
	for range 5 {
		waits = append(waits, l.When("ns/broken").String())
	}
	if got, want := fmt.Sprint(waits), "[5ms 10ms 20ms 40ms 80ms]"; got != want {
		t.Errorf("waits of one failing key = %s, want %s", got, want)
	}
	if got := l.When("ns/other"); got.String() != "5ms" {
		t.Errorf("first wait of another key = %s, want 5ms", got)
	}
}

// TestPermanentErrorIsDropped: a permanent error is not retried.
func TestPermanentErrorIsDropped(t *testing.T) {
	c := newController("things", func(context.Context, string) error {
		return fmt.Errorf("%w: spec.replicas is -1", errPermanent)
	})
	defer c.queue.ShutDown()
	c.queue.Add("ns/bad")
	c.processNextWorkItem(context.Background())
	if n := c.queue.NumRequeues("ns/bad"); n != 0 {
		t.Errorf("NumRequeues = %d, want 0: a permanent error must not be retried", n)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("queue length %d, want 0", n)
	}
}

// TestTenAddsWhileBusyMakeOneMoreSync: ten adds of a key that a worker is
// syncing make one more sync, not ten. The queue holds a key at most once,
// and holds back a key that is being worked on until the worker is done.
func TestTenAddsWhileBusyMakeOneMoreSync(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	syncs := 0
	c := newController("things", func(context.Context, string) error {
		syncs++
		if syncs == 1 {
			close(started)
			<-release // hold the worker, as a slow API server would
		}
		return nil
	})
	defer c.queue.ShutDown()
	c.queue.Add("ns/a")
	done := make(chan struct{})
	go func() { c.processNextWorkItem(context.Background()); close(done) }()
	<-started
	for range 10 {
		c.queue.Add("ns/a")
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("while the key is being synced, the queue hands out %d keys, want 0", n)
	}
	close(release)
	<-done
	if n := c.queue.Len(); n != 1 {
		t.Fatalf("after the first sync, %d keys are queued, want 1 for the ten adds", n)
	}
	c.processNextWorkItem(context.Background())
	if syncs != 2 || c.queue.Len() != 0 {
		t.Errorf("%d syncs and %d keys left, want 2 syncs (the first, then one for the ten adds) and none left", syncs, c.queue.Len())
	}
}

// TestShutdownStopsWorkers: Run returns when ctx ends, with a worker busy on
// a key and another key still queued, and shuts the queue down.
func TestShutdownStopsWorkers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	busy := make(chan struct{}, 1)
	c := newController("things", func(ctx context.Context, _ string) error {
		busy <- struct{}{}
		<-ctx.Done() // a sync in progress: it ends when the operator stops
		return ctx.Err()
	})
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	c.queue.Add("ns/a")
	select {
	case <-busy:
	case <-time.After(10 * time.Second):
		t.Fatal("no worker took the key within 10s")
	}
	c.queue.Add("ns/b") // left in the queue: its worker is busy
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the context ending")
	}
	if !c.queue.ShuttingDown() {
		t.Error("Run returned without shutting the queue down")
	}
}
