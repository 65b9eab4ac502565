package answer

import "testing"

func TestNormalizeLikeHotPotQA(t *testing.T) {
	cases := map[string]string{
		`Jonny" Craig`:                  "jonny craig",
		"The  Clash of Triton":          "clash of triton",
		"an American band.":             "american band",
		"Thea":                          "thea", // articles are whole words only
		"Gesellschaft mit beschränkter": "gesellschaft mit beschränkter",
		"1,000":                         "1000",
	}
	for in, want := range cases {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	if !ExactMatch("the end of World War II", "End of world war II.") || ExactMatch("2004", "2003") {
		t.Error("ExactMatch")
	}
}
