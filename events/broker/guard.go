package broker

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"
)

// MaxRequestBytes is the largest request, in bytes after its 4-byte size,
// the embedded broker reads from a client: a connection whose next request
// says it is larger is closed before the broker allocates for it. It is
// Kafka's own default (socket.request.max.bytes, 100 MiB), and franz-go's
// (kgo.BrokerMaxWriteBytes), so no client of this module sends more.
// Before, the embedded broker allocated whatever the size said, up to
// 4 GiB: an HTTP request sent to its port ("GET " read as a size, 1.2 GB)
// or a TLS ClientHello (0x160301…, about 370 MB) made serve allocate
// that much per connection and wait for the rest, and eight such
// connections took serve's process to 2.1 GB of RSS (a resource-leak
// walkthrough, 2026-12-04).
const MaxRequestBytes = 100 << 20

// IdleTimeout is how long the embedded broker keeps a client connection
// that sends nothing (no request, or a request cut short) before closing
// it: Kafka's own default (connections.max.idle.ms, 10 minutes). franz-go
// closes its idle connections itself after 20 s (kgo.ConnIdleTimeout),
// so only other clients, or half-open connections, meet it. Before, such a
// connection was held for good, with its descriptor and three goroutines
// (a resource-leak walkthrough, 2026-12-04).
const IdleTimeout = 10 * time.Minute

// maxRequestBytes and idleTimeout are MaxRequestBytes and IdleTimeout (a
// test shortens them).
var (
	maxRequestBytes uint32 = MaxRequestBytes
	idleTimeout            = IdleTimeout
)

// guarded wraps listen so that every connection it accepts is a
// guardedConn.
func guarded(listen func(network, address string) (net.Listener, error)) func(network, address string) (net.Listener, error) {
	return func(network, address string) (net.Listener, error) {
		ln, err := listen(network, address)
		if err != nil {
			return nil, err
		}
		return guardedListener{ln}, nil
	}
}

type guardedListener struct{ net.Listener }

// Accept implements net.Listener.
func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, idle: idleTimeout, max: maxRequestBytes}, nil
}

// guardedConn is a client connection of the embedded broker that fails a
// Read when nothing arrived for idle, and when the Kafka request size
// prefix it reads announces more than max bytes (then it closes the
// connection, as kfake does on any read error). It follows the request
// framing, a 4-byte big-endian size and that many bytes, over whatever
// lengths its reader asks for.
type guardedConn struct {
	net.Conn
	idle time.Duration
	max  uint32
	size [4]byte // the size prefix being read
	got  int     // bytes of size read
	left uint64  // bytes of the current request still to come
}

// Read implements net.Conn.
func (c *guardedConn) Read(p []byte) (int, error) {
	if c.idle > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	}
	n, err := c.Conn.Read(p)
	for i := 0; i < n; {
		if c.left > 0 {
			k := min(uint64(n-i), c.left)
			c.left -= k
			i += int(k)
			continue
		}
		c.size[c.got] = p[i]
		c.got++
		i++
		if c.got == len(c.size) {
			c.got = 0
			size := binary.BigEndian.Uint32(c.size[:])
			if size > c.max {
				_ = c.Conn.Close()
				return 0, fmt.Errorf("broker: request of %d bytes from %s: larger than %d (broker.MaxRequestBytes); connection closed", size, c.Conn.RemoteAddr(), c.max)
			}
			c.left = uint64(size)
		}
	}
	return n, err
}
