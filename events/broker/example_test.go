package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/chronicle-dev/chronicle/events/broker"
)

// The embedded broker for a test or a single-process program: Listen port 0
// picks a free port (the default is 127.0.0.1:9092), Addrs is what a
// producer or consumer dials, and every Chronicle topic exists once Start
// returns. A second broker on the same DataDir is refused.
func ExampleStart() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "chronicle-example")
	defer os.RemoveAll(dir)
	b, err := broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fmt.Println(b.Embedded(), len(b.Addrs()))

	_, err = broker.Start(ctx, broker.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	fmt.Println(errors.Is(err, broker.ErrLogInUse))
	// Output:
	// true 1
	// true
}
