package projections

// The bare-id index. Entities are keyed by scope and id (events.EntityKey),
// but a URL or a tool call names an id alone; a projection that serves such
// lookups writes one IDIndexKey row per entity (empty value) and answers
// them with Store.ScopesOf.

// IDIndexKey is the index row recording that scope holds an entity with
// the bare id: "i/" id "\x00" scope (ids cannot contain a 0 byte, so the
// split is unambiguous).
func IDIndexKey(id, scope string) string { return "i/" + id + "\x00" + scope }

// ScopesOf returns, sorted, the scopes that hold an entity with the bare id
// in projection proj (its IDIndexKey rows): usually one; the same id in
// several scopes is several entities.
func (s *Store) ScopesOf(proj, id string) ([]string, error) {
	var out []string
	prefix := IDIndexKey(id, "")
	err := s.Scan(proj, prefix, "", func(key string, _ []byte) (bool, error) {
		out = append(out, key[len(prefix):])
		return true, nil
	})
	return out, err
}
