package embedder

import (
	"context"
	"strings"
	"testing"
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
