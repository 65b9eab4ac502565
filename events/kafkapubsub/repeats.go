package kafkapubsub

import (
	"fmt"
	"sync"
	"time"
)

// RepeatWindow is how long an error or warning that was logged holds back
// its repeats (the same message with the same error): while the brokers
// are away, the consumers' fetches and group loops fail several times a
// second each, and an operator's walkthrough counted 295 lines in 81 s of
// an outage (about 13,000 an hour, a third of them errors) from the
// workers' consumers alone. The line that ends a window's silence says how
// many it held back ("repeated"). Default one minute.
const RepeatWindow = time.Minute

// maxRepeatKinds bounds the kinds of line a repeatGate remembers: past it,
// it forgets them all (and lets each kind through once more).
const maxRepeatKinds = 256

// repeatGate lets one log line of each kind through per RepeatWindow and
// counts the ones it held back. The zero value is ready; now is time.Now
// unless a test sets it.
type repeatGate struct {
	mu    sync.Mutex
	kinds map[string]*repeatKind
	now   func() time.Time
}

type repeatKind struct {
	at   time.Time // when a line of this kind was last let through
	held int       // lines held back since
}

// allow reports whether the line of kind key goes out now and, when it
// does, how many of its kind were held back since the last one.
func (g *repeatGate) allow(key string) (ok bool, held int) {
	if g == nil {
		return true, 0
	}
	now := time.Now
	if g.now != nil {
		now = g.now
	}
	t := now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kinds == nil || len(g.kinds) >= maxRepeatKinds {
		g.kinds = map[string]*repeatKind{}
	}
	k := g.kinds[key]
	if k == nil {
		g.kinds[key] = &repeatKind{at: t}
		return true, 0
	}
	if t.Sub(k.at) < RepeatWindow {
		k.held++
		return false, 0
	}
	held, k.at, k.held = k.held, t, 0
	return true, held
}

// repeatKey is the kind of a line: its message and its error.
func repeatKey(msg string, err any) string {
	return msg + "\x00" + fmt.Sprint(err)
}
