package embedder

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchShort are short sentences (5–15 tokens each).
var benchShort = []string{
	"Hello world.",
	"The quick brown fox jumps over the lazy dog.",
	"How do I rebuild a projection from the event log?",
	"My cat likes to sleep in the sun all afternoon.",
	"Orders are shipped within two business days.",
	"The payment failed because the card expired.",
	"Please reset my password.",
	"Kafka partitions are replayed from the earliest offset.",
}

// benchLong is a text of exactly 100 tokens (see the about-100-tokens case
// of testdata/reference.json).
var benchLong = "Event sourcing stores every change to the state of an application as an " +
	"immutable event in an append-only log. Projections read that log and build " +
	"views that are cheap to query, such as a search index or a table of " +
	"current balances. When a projection has a bug, it can be dropped and " +
	"rebuilt from the beginning of the log, which makes schema changes safe " +
	"and lets new features reuse years of history."

// benchmarkEmbed embeds batches of 64 texts and reports sentences/s of
// wall time and, where available, sentences per CPU-second (the throughput
// of one fully used core), which other load on the machine barely affects.
func benchmarkEmbed(b *testing.B, u *USELite, texts []string) {
	batch := make([]string, 64)
	for i := range batch {
		batch[i] = texts[i%len(texts)]
	}
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := u.Embed(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime() - cpu0
	n := float64(b.N * len(batch))
	b.ReportMetric(n/b.Elapsed().Seconds(), "sentences/s")
	if cpu > 0 {
		b.ReportMetric(n/cpu.Seconds(), "sentences/cpu-s")
	}
}

// defaultUSELite returns the embedder as NewUSELite builds it.
func defaultUSELite(b *testing.B) *USELite {
	u, err := NewUSELite()
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// BenchmarkUSELiteShort measures throughput on short sentences.
func BenchmarkUSELiteShort(b *testing.B) { benchmarkEmbed(b, defaultUSELite(b), benchShort) }

// BenchmarkUSELite100Tokens measures throughput on ~100-token texts.
func BenchmarkUSELite100Tokens(b *testing.B) {
	benchmarkEmbed(b, defaultUSELite(b), []string{benchLong})
}

// BenchmarkUSELitePortableShort is BenchmarkUSELiteShort with the portable
// Go kernel (what runs without AVX2+FMA or with -tags purego).
func BenchmarkUSELitePortableShort(b *testing.B) {
	benchmarkEmbed(b, newUSELiteWith(b, false, nil), benchShort)
}

// BenchmarkUSELitePortable100Tokens is BenchmarkUSELite100Tokens with the
// portable Go kernel.
func BenchmarkUSELitePortable100Tokens(b *testing.B) {
	benchmarkEmbed(b, newUSELiteWith(b, false, nil), []string{benchLong})
}

// BenchmarkUSELiteSingle measures the latency of one short sentence.
func BenchmarkUSELiteSingle(b *testing.B) {
	u := defaultUSELite(b)
	ctx := context.Background()
	text := []string{strings.Repeat("word ", 8)}
	for b.Loop() {
		if _, err := u.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUSELiteQuery measures the latency of embedding one query, as
// memory_search does (EmbedQuery): distinct 2–8-word queries (3–11
// tokens), one text per call, with the matrix products split across idle
// cores while that pays (now) and
// on the calling goroutine only (before, USELite.Serial: the streaming
// path of issue 11 item 2 before the split), alternating which goes first
// on each query so that both see the same load. It reports p50 and p99 in
// ms of each and their ratios.
func BenchmarkUSELiteQuery(b *testing.B) {
	u := defaultUSELite(b)
	before := &USELite{lm: u.lm, Serial: true}
	words := strings.Fields("cancel the flight reservation and refund the payment to the original card " +
		"upgrade cabin class for passenger baggage allowance certificate insurance delay compensation policy")
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	var now, old []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n := 2 + r.IntN(7)
		q := make([]string, n)
		for j := range q {
			q[j] = words[r.IntN(len(words))]
		}
		text := []string{strings.Join(q, " ")}
		for k := 0; k < 2; k++ {
			e, d := u, &now
			if (i+k)%2 == 1 {
				e, d = before, &old
			}
			t0 := time.Now()
			if _, err := e.EmbedQuery(ctx, text[0]); err != nil {
				b.Fatal(err)
			}
			*d = append(*d, time.Since(t0))
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))].Microseconds()) / 1000
	}
	n50, n99, o50, o99 := q(now, 0.5), q(now, 0.99), q(old, 0.5), q(old, 0.99)
	b.ReportMetric(n50, "now_p50_ms")
	b.ReportMetric(n99, "now_p99_ms")
	b.ReportMetric(o50, "before_p50_ms")
	b.ReportMetric(o99, "before_p99_ms")
	b.ReportMetric(o50/n50, "p50_speedup")
	b.ReportMetric(o99/n99, "p99_speedup")
}
