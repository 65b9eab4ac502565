package projections

import (
	"fmt"
	"sort"
	"strings"
)

// ListScoped lists a page of the rows of projection proj whose keys are
// rowPrefix + <scope>/<rest>, in key order: the rows of scopes (each scope
// one key range, so a scope's list costs its own rows, whatever other
// scopes hold), or with scopes nil of every scope, those allow refuses
// skipped by their key (allow nil: all). It starts after cursor (a key
// without rowPrefix, "" from the first) and returns at most limit (≥ 1)
// items; next is the key (without rowPrefix) of the last one when more
// follow, else "". row turns a row (its key without rowPrefix) into an
// item, or skips it (keep false: a filter). GET /v1/workflows,
// /v1/deadletters and /v1/reasoning list through it.
func ListScoped[T any](s *Store, proj, rowPrefix string, scopes []string, allow func(scope string) bool, limit int, cursor string,
	row func(key string, val []byte) (item T, keep bool, err error)) (list []T, next string, err error) {
	if limit < 1 {
		return nil, "", fmt.Errorf("%s: list limit %d is below 1", proj, limit)
	}
	ranges := []string{""}
	if scopes != nil {
		ranges = make([]string, 0, len(scopes))
		for _, sc := range scopes {
			ranges = append(ranges, sc+"/")
		}
		sort.Strings(ranges) // key order across the ranges
	}
	last := ""
	for _, r := range ranges {
		after := ""
		switch {
		case cursor == "" || cursor < r:
		case strings.HasPrefix(cursor, r):
			after = rowPrefix + cursor
		default:
			continue // the whole range is before the cursor
		}
		err := s.Scan(proj, rowPrefix+r, after, func(k string, val []byte) (bool, error) {
			key := strings.TrimPrefix(k, rowPrefix)
			scope, _, ok := strings.Cut(key, "/")
			if !ok || allow != nil && !allow(scope) {
				return true, nil
			}
			item, keep, err := row(key, val)
			if err != nil || !keep {
				return err == nil, err
			}
			if len(list) == limit {
				next = last
				return false, nil
			}
			list, last = append(list, item), key
			return true, nil
		})
		if err != nil || next != "" {
			return list, next, err
		}
	}
	return list, next, nil
}
