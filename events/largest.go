package events

import "github.com/valyala/fastjson"

// largestMember is the JSON pointer of the member to shorten in raw, an
// encoded event above MaxEventBytes, and its size in bytes encoded: from
// the top, the largest member of each object, followed down while it holds
// more than half of its object (an array, a string or a number ends it).
// ("/", len(raw)) when raw does not parse or no member stands out. An
// oversized event's refusal named "/", which names nothing a caller can
// shorten (a passes walkthrough, 2026-12-06: a 990 KB output and 20,000
// steps were both refused at "/").
func largestMember(raw []byte) (pointer string, size int) {
	var p fastjson.Parser
	v, err := p.ParseBytes(raw)
	if err != nil {
		return "/", len(raw)
	}
	pointer, size = "", len(raw)
	for v.Type() == fastjson.TypeObject {
		o, _ := v.Object()
		var (
			best     *fastjson.Value
			bestName string
			bestSize int
			buf      []byte
		)
		o.Visit(func(k []byte, c *fastjson.Value) {
			buf = c.MarshalTo(buf[:0])
			if n := len(buf) + len(k) + 4; n > bestSize { // "k":v,
				best, bestName, bestSize = c, string(k), n
			}
		})
		if best == nil || bestSize*2 <= size {
			break
		}
		pointer, size, v = pointer+"/"+PointerToken(bestName), bestSize, best
	}
	if pointer == "" {
		return "/", len(raw)
	}
	return pointer, size
}
