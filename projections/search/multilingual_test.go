package search

import (
	"context"
	"slices"
	"testing"
)

// A memory in Japanese, Chinese, German, Turkish, Arabic or Hindi is found
// by BM25 with a query in the same language: a CJK word inside a sentence
// without spaces, the other Unicode normalization form (NFD "café"
// against the stored NFC one), another case (German ß against SS,
// Turkish İ), full-width Latin letters, and words with combining marks
// (Hindi vowel signs, Arabic harakat) that are one word, not several
// (split at its marks, "हिन्दी" matched "हिन्द" as well as itself).
// Before, the tokenizer kept a CJK sentence as one token, split words at
// every combining mark and lower-cased without folding, so every query
// below found nothing.
func TestBM25FindsMultilingualText(t *testing.T) {
	s := NewMemStore()
	docs := []Doc{
		{ID: "ja", Title: "東京の天気を調べてから予約する", Content: "x"},
		{ID: "zh", Title: "先查询北京的航班再改签", Content: "x"},
		{ID: "de", Title: "Lieferadresse Hauptstraße prüfen", Content: "x"},
		{ID: "fr", Title: "Réserver un café", Content: "x"},
		{ID: "tr", Title: "İstanbul uçuşunu değiştir", Content: "x"},
		{ID: "hi", Title: "हिन्दी में उत्तर दें", Content: "x"},
		{ID: "hi-ocean", Title: "हिन्द महासागर", Content: "x"},
		{ID: "ar", Title: "تَغْيِير الحجز", Content: "x"},
		{ID: "en", Title: "Rebook flight HAT170", Content: "x"},
		{ID: "ko", Title: "서울에서 출발하는 항공편", Content: "x"},
	}
	for i := range docs {
		docs[i].Scope, docs[i].Outcome, docs[i].Confidence = "org:o", "success", 0.8
	}
	if err := s.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, want string }{
		{"東京", "ja"},
		{"天気", "ja"},
		{"予約", "ja"},
		{"ｶﾞｲﾄﾞ 予約", "ja"},
		{"北京 航班", "zh"},
		{"改签", "zh"},
		{"HAUPTSTRASSE", "de"},
		{"PRÜFEN", "de"},
		{"cafe\u0301", "fr"},
		{"ＣＡＦＥ\u0301", "fr"},
		{"istanbul", "tr"},
		{"İSTANBUL", "tr"},
		{"हिन्दी", "hi"},
		{"تَغْيِير", "ar"},
		{"서울에서", "ko"},
		{"rebook HAT170", "en"},
	} {
		cands, err := s.Candidates(context.Background(), nil, c.query, Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, cd := range cands {
			if cd.HasBM25 {
				ids = append(ids, cd.ID)
			}
		}
		if c.query == "हिन्दी" && slices.Contains(ids, "hi-ocean") {
			t.Errorf("query %q: BM25 found %v: a word shares its letters but not its vowel signs", c.query, ids)
		}
		if len(ids) == 0 || ids[0] != c.want {
			t.Errorf("query %q: BM25 found %v, want %s first", c.query, ids, c.want)
		}
	}
}

// Tokens of English text are what they were before (lower-cased runs of
// letters and digits), so the demo's figures and the evaluation's
// rankings do not move.
func TestTokensOfEnglishUnchanged(t *testing.T) {
	got := Tokens("Rebook flight HAT170 (user's $500 refund) — step 2: cancel_reservation")
	want := []string{"rebook", "flight", "hat170", "user", "s", "500", "refund", "step", "2", "cancel", "reservation"}
	if !slices.Equal(got, want) {
		t.Fatalf("Tokens = %q, want %q", got, want)
	}
}
