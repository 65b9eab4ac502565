package weaviate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/projections/search"
	"github.com/chronicle-dev/chronicle/projections/search/searchtest"
	"github.com/chronicle-dev/chronicle/projections/search/weaviate/weaviatetest"
)

// failDoc is document i of the failure test: a unique word ("w<i>") in
// its content and a vector of its own, so each can be found alone.
func failDoc(i int, version string) search.Doc {
	return search.Doc{ID: fmt.Sprintf("fail-%04d", i), Scope: "project:p", Title: "doc " + version,
		Content: fmt.Sprintf("w%d %s", i, version), Outcome: "success", Confidence: 0.9,
		Vector: searchtest.Mix(map[int]float64{i % searchtest.Dim: 1, (i + 7) % searchtest.Dim: 0.5 + 0.1*float64(i/searchtest.Dim)}), Model: "failure-test"}
}

// TestServerDownAndRestart stops a real server twice while a writer keeps
// upserting (first SIGTERM, then SIGKILL, i.e. a crash), checks that
// Upsert, Candidates and Len fail with ErrUnavailable within their retry
// budget while it is down, restarts it on the same data directory and
// ports, and checks that every acknowledged write is still there and
// writes succeed again.
func TestServerDownAndRestart(t *testing.T) {
	srv := weaviatetest.Start(t)
	cfg := Config{Host: srv.Host, Timeout: 2 * time.Second, RetryInitialInterval: 50 * time.Millisecond,
		RetryMaxInterval: 400 * time.Millisecond, RetryMaxElapsed: 1500 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()

	const preload = 300
	var docs []search.Doc
	for i := 0; i < preload; i++ {
		docs = append(docs, failDoc(i, "v1"))
	}
	if err := s.Upsert(ctx, docs); err != nil {
		t.Fatalf("preload: %v", err)
	}
	// Doc 0 changes before the first stop: its latest version must survive.
	if err := s.Upsert(ctx, []search.Doc{failDoc(0, "v2")}); err != nil {
		t.Fatalf("update: %v", err)
	}

	// The writer upserts batches of 5 new documents, each batch again
	// until it is acknowledged; acked is the highest acknowledged index.
	var mu sync.Mutex
	acked, failures := preload, 0
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		next := preload
		for {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			batch := []search.Doc{}
			for i := next; i < next+5; i++ {
				batch = append(batch, failDoc(i, "v1"))
			}
			err := s.Upsert(ctx, batch)
			mu.Lock()
			switch {
			case err == nil:
				next += 5
				acked = next
			case errors.Is(err, ErrUnavailable):
				failures++
			default:
				mu.Unlock()
				writerDone <- fmt.Errorf("writer: unexpected error: %w", err)
				return
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	ackedNow := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return acked, failures
	}
	waitAcks := func(more int) {
		t.Helper()
		base, _ := ackedNow()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if a, _ := ackedNow(); a >= base+more {
				return
			}
			select {
			case err := <-writerDone:
				t.Fatalf("writer ended: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("writer acknowledged fewer than %d batches-worth in 30 s", more)
	}

	downChecks := func(how string) {
		t.Helper()
		for _, op := range []struct {
			name string
			run  func() error
		}{
			{"Upsert", func() error { return s.Upsert(ctx, []search.Doc{failDoc(99999, "down")}) }},
			{"Candidates", func() error {
				_, err := s.Candidates(ctx, failDoc(1, "").Vector, "w1", search.Filter{}, 5)
				return err
			}},
			{"Len", func() error { _, err := s.Len(ctx); return err }},
		} {
			start := time.Now()
			err := op.run()
			took := time.Since(start)
			if err == nil {
				t.Fatalf("%s while the server is down (%s): no error", op.name, how)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("%s while down (%s): %v, want ErrUnavailable", op.name, how, err)
			}
			// Bounded: the retry budget plus one request timeout, plus slack.
			if limit := cfg.RetryMaxElapsed + cfg.Timeout + 2*time.Second; took > limit {
				t.Fatalf("%s while down took %v, more than %v", op.name, took, limit)
			}
			t.Logf("%s while down (%s): error after %v: %v", op.name, how, took.Round(time.Millisecond), err)
		}
	}

	for _, cycle := range []struct {
		how  string
		down func()
	}{
		{"SIGTERM", func() {
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
		}},
		{"SIGKILL", srv.Kill},
	} {
		waitAcks(20)
		cycle.down()
		ackedAtStop, _ := ackedNow()
		t.Logf("%s: server stopped with %d documents acknowledged", cycle.how, ackedAtStop)
		downChecks(cycle.how)
		if err := srv.Restart(); err != nil {
			t.Fatalf("restart after %s: %v", cycle.how, err)
		}
		// Writes succeed again.
		waitAcks(20)
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	total, failures := ackedNow()
	if failures == 0 {
		t.Errorf("the writer never saw the server down")
	}
	t.Logf("writer: %d documents acknowledged, %d batches failed while the server was down", total, failures)

	// Nothing acknowledged is lost; the failed probe upserts never landed
	// partially into other ids.
	n, err := s.Len(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != total && n != total+1 { // +1: the probe doc 99999 may have been written before the error surfaced
		t.Fatalf("Len = %d after restarts, want %d acknowledged documents", n, total)
	}
	for i := 0; i < total; i++ {
		word := fmt.Sprintf("w%d", i)
		cs, err := s.Candidates(ctx, nil, word, search.Filter{}, 1)
		if err != nil {
			t.Fatalf("find %s: %v", word, err)
		}
		if len(cs) != 1 || cs[0].ID != failDoc(i, "").ID {
			t.Fatalf("document %d (acknowledged before a stop or after) not found by its word %s: %+v", i, word, cs)
		}
		if i == 0 && cs[0].Title != "doc v2" {
			t.Fatalf("document 0 lost its update: title %q, want \"doc v2\"", cs[0].Title)
		}
	}
	// And by vector.
	cs, err := s.Candidates(ctx, failDoc(42, "").Vector, "", search.Filter{}, 1)
	if err != nil || len(cs) != 1 || cs[0].ID != "fail-0042" {
		t.Fatalf("nearest to document 42's vector: %+v, %v", cs, err)
	}
}

// TestUpsertRetriedAfterCrash kills the server (SIGKILL) while it applies
// a batch and checks that every document of the batch is found by BM25
// on its own word once the write is acknowledged, not only counted by
// Len: in half of the rounds Upsert's own retries reach the restarted
// server, in the other half Upsert fails with ErrUnavailable and the
// batch is written again by a second call, as a caller does.
//
// The kill is aimed at the moment the batch's first objects appear (Len
// grows), when the server (v1.35.2) has written objects to the objects
// bucket's write-ahead log but may still hold their inverted-index
// entries in its buffers (see unsureSet). Whether it lands there is
// timing: a round where the crash left every object whole (or none)
// tests nothing. For the rounds with a second Upsert the test logs how
// many objects of the batch the restarted server held and how many of
// them BM25 found, before the batch was written again.
func TestUpsertRetriedAfterCrash(t *testing.T) {
	srv := weaviatetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	// s retries through a restart; quick gives up while the server is down.
	cfg := Config{Host: srv.Host, Timeout: 5 * time.Second, RetryInitialInterval: 50 * time.Millisecond,
		RetryMaxInterval: 400 * time.Millisecond, RetryMaxElapsed: 40 * time.Second}
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	cfg.RetryMaxElapsed = time.Second
	quick, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer quick.Close()

	const size = 200 // one batch (DefaultBatchSize)
	batchOf := func(round int) []search.Doc {
		docs := make([]search.Doc, size)
		for i := range docs {
			docs[i] = failDoc(round*size+i, "v1")
		}
		return docs
	}
	// found counts the documents of docs BM25 finds by their own word.
	found := func(docs []search.Doc) (int, []string) {
		t.Helper()
		n := 0
		var missing []string
		for _, d := range docs {
			word := strings.Fields(d.Content)[0]
			cs, err := s.Candidates(ctx, nil, word, search.Filter{}, 1)
			if err != nil {
				t.Fatalf("find %s: %v", word, err)
			}
			if len(cs) == 1 && cs[0].ID == d.ID {
				n++
			} else {
				missing = append(missing, d.ID)
			}
		}
		return n, missing
	}
	if err := s.Upsert(ctx, batchOf(0)); err != nil {
		t.Fatalf("first batch: %v", err)
	}

	const rounds = 4
	cut := 0 // rounds with a second Upsert whose crash left objects without their postings
	for round := 1; round <= rounds; round++ {
		inCall := round%2 == 1 // Upsert's own retries see the restarted server
		w := s
		if !inCall {
			w = quick
		}
		docs := batchOf(round)
		before, err := s.Len(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Upsert(ctx, docs) }()
		var first error
		finished := false
	watch:
		for {
			select {
			case first = <-done:
				finished = true
				break watch
			default:
			}
			if n, err := quick.Len(ctx); err != nil || n > before {
				break
			}
		}
		srv.Kill()
		if !inCall && !finished {
			first = <-done
		}
		if err := srv.Restart(); err != nil {
			t.Fatalf("round %d: restart: %v", round, err)
		}
		how := "within Upsert"
		if inCall {
			if !finished {
				first = <-done
			}
			if first != nil {
				t.Fatalf("round %d: Upsert across the restart: %v", round, first)
			}
		} else {
			// Before the second call: what the crash left.
			held, err := s.Len(ctx)
			if err != nil {
				t.Fatal(err)
			}
			foundBefore, _ := found(docs)
			if held-before > foundBefore {
				cut++
			}
			how = fmt.Sprintf("by a second Upsert after %v; the restarted server held %d objects of the batch, BM25 found %d",
				first, held-before, foundBefore)
			if first != nil && !errors.Is(first, ErrUnavailable) {
				t.Fatalf("round %d: Upsert cut by the kill: %v, want ErrUnavailable", round, first)
			}
			// The caller's retry: again while the server is still loading.
			for attempt := 1; ; attempt++ {
				err := w.Upsert(ctx, docs)
				if err == nil {
					break
				}
				if !errors.Is(err, ErrUnavailable) || attempt == 20 {
					t.Fatalf("round %d: Upsert %d after the restart: %v", round, attempt, err)
				}
			}
		}
		n, missing := found(docs)
		total, err := s.Len(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d (retried %s): after the write Len %d, BM25 finds %d of %d", round, how, total, n, size)
		if n != size {
			t.Errorf("round %d: %d documents acknowledged after the crash are counted (Len %d) but BM25 does not find them by their word, e.g. %v",
				round, size-n, total, missing[:min(3, len(missing))])
		}
		if total != (round+1)*size {
			t.Errorf("round %d: Len %d, want %d", round, total, (round+1)*size)
		}
	}
	t.Logf("%d of %d kills before a second Upsert left objects without their BM25 postings", cut, rounds/2)
}
