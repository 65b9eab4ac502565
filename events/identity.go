package events

import "strings"

// EntityKey is the identity of an entity — a session, memory, search,
// reasoning task, workflow or pattern — wherever Chronicle stores or routes
// it: its scope and its id joined by '/', e.g. "project:a/sa-2". The same id
// in two scopes is two entities. Scopes (project:<id>, team:<id>, org:<id>)
// never contain '/', so the first '/' separates the two parts even when an
// id contains '/'. An empty scope stands for DefaultScope.
//
// Projection rows of an entity are keyed by EntityKey, and so is the Kafka
// record key of its events, so all of an entity's events share a partition.
func EntityKey(scope, id string) string {
	if scope == "" {
		scope = DefaultScope
	}
	return scope + "/" + id
}

// SplitEntityKey is the inverse of EntityKey. ok is false when k has no '/'
// or an empty part.
func SplitEntityKey(k string) (scope, id string, ok bool) {
	scope, id, ok = strings.Cut(k, "/")
	if !ok || scope == "" || id == "" {
		return "", "", false
	}
	return scope, id, true
}
