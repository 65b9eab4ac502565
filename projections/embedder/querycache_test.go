package embedder

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// countingEmbedder counts the texts it embeds; every text gets a vector
// of its length.
type countingEmbedder struct {
	calls int
	fail  bool
}

func (e *countingEmbedder) Model() string { return "count" }
func (e *countingEmbedder) Dim() int      { return 1 }
func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.fail {
		return nil, errors.New("down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		e.calls++
		out[i] = []float32{float32(len(t))}
	}
	return out, nil
}

func TestQueryCache(t *testing.T) {
	ctx := context.Background()
	e := &countingEmbedder{}
	c, err := NewQueryCache(e, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"a", "bb", "a", "bb", "ccc", "a"} {
		v, err := c.Embed(ctx, "", q)
		if err != nil || !slices.Equal(v, []float32{float32(len(q))}) {
			t.Fatalf("Embed(%q) = %v, %v", q, v, err)
		}
	}
	// a, bb miss; a, bb hit; ccc misses and evicts a (least recently
	// used after the bb hit); a misses again.
	if e.calls != 4 || c.Len() != 2 {
		t.Errorf("%d model calls, %d cached; want 4 and 2", e.calls, c.Len())
	}
	e.fail = true
	if _, err := c.Embed(ctx, "", "dddd"); err == nil {
		t.Error("an embedder error was not returned")
	}
	if v, err := c.Embed(ctx, "", "a"); err != nil || v[0] != 1 {
		t.Errorf("cached a = %v, %v", v, err)
	}
	if _, err := NewQueryCache(e, 0); err == nil {
		t.Error("NewQueryCache accepted size 0")
	}

	// With USE lite, a hit is the vector the model gives.
	u, err := NewUSELite()
	if err != nil {
		t.Fatal(err)
	}
	uc, _ := NewQueryCache(u, 8)
	first, _ := uc.Embed(ctx, "p", "cancel my flight")
	again, _ := uc.Embed(ctx, "p", "cancel my flight")
	direct, _ := u.Embed(ctx, []string{"cancel my flight"})
	if !slices.Equal(first, direct[0]) || !slices.Equal(again, direct[0]) {
		t.Error("cached USE lite vector differs from the model's")
	}
}

// A text cached in one partition is not a hit in another (the model runs
// again, and the first partition's entry stays), and is a hit in its own
// partition again: a caller of one partition cannot time what another
// searched (tenant-isolation review).
func TestQueryCachePartitions(t *testing.T) {
	ctx := context.Background()
	e := &countingEmbedder{}
	c, err := NewQueryCache(e, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(ctx, "project:a", "secret plan"); err != nil {
		t.Fatal(err)
	}
	if c.Contains("project:b", "secret plan") {
		t.Fatal("a text cached in project:a is cached in project:b")
	}
	v, err := c.Embed(ctx, "project:b", "secret plan")
	if err != nil || !slices.Equal(v, []float32{11}) {
		t.Fatalf("Embed in project:b = %v, %v", v, err)
	}
	if e.calls != 2 {
		t.Fatalf("%d model calls for one text in two partitions, want 2: the second partition hit the first's entry", e.calls)
	}
	if _, err := c.Embed(ctx, "project:a", "secret plan"); err != nil || e.calls != 2 {
		t.Fatalf("the text again in project:a: %v, %d model calls, want a hit (2)", err, e.calls)
	}
	if c.Len() != 2 || !c.Contains("project:a", "secret plan") || !c.Contains("project:b", "secret plan") {
		t.Fatalf("%d entries, want the text once in each partition", c.Len())
	}
}

// One partition's texts never evict another's entries. Before, the
// partitions shared one least-recently-used list of the cache's size: a
// tenant that cached a text, then found it a miss, knew that others had
// searched at least that many texts meanwhile.
func TestQueryCacheEvictsWithinAPartition(t *testing.T) {
	ctx := context.Background()
	e := &countingEmbedder{}
	c, err := NewQueryCache(e, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(ctx, "project:a", "probe"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // another tenant's flood: ten times the size
		if _, err := c.Embed(ctx, "project:b", strings.Repeat("x", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	calls := e.calls
	if _, err := c.Embed(ctx, "project:a", "probe"); err != nil || e.calls != calls {
		t.Fatalf("project:a's text after project:b's flood: %v, %d model calls, want a hit", err, e.calls-calls)
	}
	if c.Len() != 5 {
		t.Errorf("%d entries, want project:a's 1 and project:b's 4", c.Len())
	}
	// within a partition, the least recently used goes
	for _, q := range []string{"p2", "p3", "p4", "p5"} {
		if _, err := c.Embed(ctx, "project:a", q); err != nil {
			t.Fatal(err)
		}
	}
	if c.Contains("project:a", "probe") || !c.Contains("project:a", "p5") {
		t.Error("project:a's oldest entry was not the one evicted by its own texts")
	}
}

// A partition unused for Idle is dropped, whatever the others do; past
// Partitions a new partition is not created (its texts are embedded and
// not cached) until another has been idle for Idle.
func TestQueryCachePartitionsAndIdle(t *testing.T) {
	ctx := context.Background()
	e := &countingEmbedder{}
	c, err := NewQueryCacheConfig(e, QueryCacheConfig{Size: 8, Partitions: 2, Idle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	c.now = func() time.Time { return now }
	hit := func(part, text string) bool {
		t.Helper()
		calls := e.calls
		if _, err := c.Embed(ctx, part, text); err != nil {
			t.Fatal(err)
		}
		return e.calls == calls
	}
	hit("a", "q")
	hit("b", "q")
	// twice: the first is a miss, the second would hit had the first been cached
	if first, second := hit("c", "q"), hit("c", "q"); first || second {
		t.Fatal("a third partition was cached with Partitions 2")
	}
	now = now.Add(30 * time.Second)
	if !hit("a", "q") {
		t.Fatal("partition a lost its entry within Idle")
	}
	now = now.Add(45 * time.Second) // b idle 75 s, a 45 s
	if hit("c", "q") {
		t.Fatal("c hit before it had a partition")
	}
	if !c.Contains("c", "q") || c.Contains("b", "q") {
		t.Fatal("c did not take the idle partition b's place")
	}
	if !hit("a", "q") {
		t.Fatal("partition a, used 45 s ago, was dropped")
	}
	now = now.Add(time.Minute) // everyone idle
	if hit("a", "q") {
		t.Fatal("partition a's entry outlived Idle")
	}
	for _, bad := range []QueryCacheConfig{{Size: -1}, {Partitions: -2}, {Idle: -time.Second}} {
		if _, err := NewQueryCacheConfig(e, bad); err == nil {
			t.Errorf("NewQueryCacheConfig accepted %+v", bad)
		}
	}
}
