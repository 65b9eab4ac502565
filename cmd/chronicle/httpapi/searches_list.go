package httpapi

import (
	"net/http"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/processors/treesearch"
)

// Search list defaults: GET /v1/searches answers DefaultSearchList
// searches when limit is absent, and at most MaxSearchList.
const (
	DefaultSearchList = 50
	MaxSearchList     = 500
)

// SearchList is the answer of GET /v1/searches: a page of search
// summaries in key order (scope, '/', id) and the cursor of the next page
// ("" on the last page).
type SearchList struct {
	Searches   []treesearch.Summary `json:"searches"`
	NextCursor string               `json:"next_cursor"`
}

// searchListParams reads GET /v1/searches' limit, cursor (a next_cursor:
// <scope>/<search id>) and scope, as GET /v1/reasoning does
// (keyListParams).
func searchListParams(w http.ResponseWriter, r *http.Request) (limit int, cursor string, inScope func(string) bool, ok bool) {
	return keyListParams(w, r, DefaultSearchList, MaxSearchList, "search", "s-1")
}

// listSearchesLocal lists the searches of this instance's store that the
// caller may read (and ?scope= selects): a 503 RestoringError while it
// restores a partition of chronicle.searches.
func (s *Server) listSearchesLocal(w http.ResponseWriter, r *http.Request) {
	limit, cursor, inScope, ok := searchListParams(w, r)
	if !ok {
		return
	}
	serveLocalList(s, w, r, string(events.TopicSearches), "searches", inScope,
		func(scopes []string, allow func(string) bool) ([]treesearch.Summary, string, error) {
			return treesearch.List(s.P.Store, scopes, allow, limit, cursor)
		},
		searchListAnswer)
}

// searchListAnswer is GET /v1/searches' body for a page.
func searchListAnswer(rows []treesearch.Summary, next string) any {
	if rows == nil {
		rows = []treesearch.Summary{}
	}
	return SearchList{Searches: rows, NextCursor: next}
}

// listSearches serves GET /v1/searches: the tree searches of the scopes
// the caller reads (?scope= narrows them to a kind or one scope), in key
// order, limit at a time; in a cluster every member's store, merged by key
// (serveMergedList), as GET /v1/reasoning. Before, a search id could only
// be learnt from whoever started the search (a walkthrough's finding).
func (s *Server) listSearches(w http.ResponseWriter, r *http.Request) {
	serveMergedList(s, w, r, mergedList[treesearch.Summary]{
		topic: string(events.TopicSearches), member: "searches", noun: "search", local: s.listSearchesLocal,
		limit: func(w http.ResponseWriter, r *http.Request) (int, bool) {
			limit, _, _, ok := searchListParams(w, r)
			return limit, ok
		},
		key:    treesearch.Summary.Key,
		answer: searchListAnswer,
	})
}
