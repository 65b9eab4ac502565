package weaviate

import (
	"errors"
	"testing"
)

// The messages of a Weaviate still loading its collections after a
// restart are retried, whichever request meets them (a batch write, a
// DELETE, a GraphQL Get); a GraphQL error of another kind is a refusal.
func TestLoadingServerMessagesAreTransient(t *testing.T) {
	var te *transientError
	for _, msg := range []string{
		"explorer: list class: search: tried to browse non-existing index for Memory",
		"could not find index for class Memory",
		"shard is not ready",
		"delete from non-existing index for Memory",
	} {
		if err := graphQLError([]string{msg}); !errors.As(err, &te) {
			t.Errorf("%q: %v, want a transient error", msg, err)
		}
	}
	if err := graphQLError([]string{"Cannot query field \"nope\" on type \"Memory\""}); errors.As(err, &te) {
		t.Errorf("a query error is transient: %v", err)
	}
}
