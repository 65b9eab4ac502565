package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkMemStoreHeapUniqueWords reports the heap the embedded store
// holds per byte of indexed text when every word of the text is one no
// other document has (ids, hashes, names): the BM25 postings' worst case.
// 10,000 documents of 100 random 8-letter words in 4 scopes, no vectors;
// heap_bytes_per_text_byte is the live heap after a GC, the store held,
// minus before, over the bytes of the documents' text.
func BenchmarkMemStoreHeapUniqueWords(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var sb strings.Builder
		for range 8 {
			sb.WriteByte(byte('a' + rng.IntN(26)))
		}
		return sb.String()
	}
	docs := make([]Doc, 10_000)
	textBytes := 0
	for i := range docs {
		ws := make([]string, 100)
		for j := range ws {
			ws[j] = word()
		}
		docs[i] = Doc{ID: fmt.Sprintf("d%d", i), Scope: fmt.Sprintf("project:%d", i%4), Title: ws[0], Content: strings.Join(ws[1:], " ")}
		textBytes += len(DocText(docs[i]))
	}
	var perByte float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewMemStore()
		if err := s.Upsert(context.Background(), docs); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perByte = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(textBytes)
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perByte, "heap_bytes_per_text_byte")
}
