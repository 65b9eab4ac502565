package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/chronicle-dev/chronicle/cmd/chronicle/httpapi"
	"github.com/chronicle-dev/chronicle/processors/pipeline"
	"github.com/chronicle-dev/chronicle/projections/search"
)

// An agent runtime records a memory, searches for it and gives feedback
// through a running service's HTTP API. Here the service runs in-process
// (a pipeline on the embedded broker, served by Server); against `chronicle
// serve` only the Client is needed, with Base its URL and Token an API
// token.
func ExampleClient() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	p, err := pipeline.Start(ctx, pipeline.Config{DataDir: dir, KafkaListen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	srv := httptest.NewServer((&httpapi.Server{P: p}).Handler())
	defer srv.Close()

	c := &httpapi.Client{Base: srv.URL}
	// Record answers once the memory bank applied the recording (at most
	// 5 s); the IdempotencyKey makes a retry after a timeout or a 503 the
	// same recording.
	rec, err := c.Record(ctx, search.Record{
		Title:          "Look up the order before a refund",
		Description:    "refund needs the order id",
		Content:        "call get_order, then refund with its id",
		Outcome:        "success",
		Tags:           []string{"refund"},
		IdempotencyKey: "run-7-memory-1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.ID, rec.Message, *rec.Confidence, *rec.Evidence)

	res, err := c.Search(ctx, search.Query{Text: "how do I refund an order", Limit: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range res.Memories {
		fmt.Println(h.ID == rec.ID, h.Title, h.Scope, h.Confidence)
	}

	fb, err := c.Feedback(ctx, search.Feedback{MemoryID: rec.ID, Helpful: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	// one signal waits for a second source to agree (consensus)
	fmt.Println(fb.Success, *fb.NewConfidence)

	// a refusal names the member as the in-process service does
	_, err = c.Record(ctx, search.Record{Title: "t", Content: "c", Outcome: "success"})
	var fe *search.FieldError
	if errors.As(err, &fe) {
		fmt.Println(fe.Pointer, errors.Is(err, search.ErrInvalid))
	}
	// Output:
	// mem-053146cd4bd51d47fb379f5d18c21d02 memory recorded in org:default 0.8 1
	// true Look up the order before a refund org:default 0.8
	// true 0.8
	// /description true
}
