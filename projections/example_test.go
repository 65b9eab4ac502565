package projections_test

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/chronicle-dev/chronicle/events"
	"github.com/chronicle-dev/chronicle/projections"
)

// A processor's Apply function sees its projection through a Tx: reads see
// the call's own writes, and the rows, the idempotency key and the next
// offset commit in one batch. A record applied again (the same offset, or
// the same source and id at a later offset) changes nothing. The store is
// kept in memory here (Options.FS); a directory is the usual place.
func ExampleStore_Apply() {
	store, err := projections.Open("store", projections.Options{FS: vfs.NewMem(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	// count the tool calls of each session
	count := func(tx *projections.Tx, env *events.Envelope) error {
		v, _, err := tx.Get("calls/" + env.SessionID)
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(string(v))
		return tx.Set("calls/"+env.SessionID, []byte(strconv.Itoa(n+1)))
	}
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for i, id := range []string{"c1", "c2", "c2"} { // c2 twice: a producer's retry
		env, err := events.New(events.WorkflowTaskCompleted, "agent/demo", id, at,
			events.TaskCompletedData{WorkflowID: "s1", TaskID: id, ToolID: "get_reservation_details", Success: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		env.SessionID = "s1"
		res, err := store.Apply("calls", projections.Position{Topic: "chronicle.sessions", Offset: int64(i)}, &env, count)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(id, res)
	}
	v, _, _ := store.Get("calls", "calls/s1")
	next, _ := store.NextOffset("calls", "chronicle.sessions", 0)
	fmt.Printf("calls/s1 = %s, next offset %d\n", v, next)
	// Output:
	// c1 Applied
	// c2 Applied
	// c2 Duplicate
	// calls/s1 = 2, next offset 3
}
