package broker

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
)

// gateSource is the loopback address Start's own recovery client dials
// from while the gate is shut: the embedded broker listens on 127.0.0.1,
// and every other client (a member, kcat) dials from 127.0.0.1 too.
var gateSource = net.IPv4(127, 0, 0, 2)

// connGate holds back the embedded broker's client connections while a
// Start after a kill closes the transactions the killed process left open
// (abortDangling), so that no client can begin a transaction before the
// abort markers are written.
//
// Why: kfake writes a marker for a producer id whatever its epoch, so a
// member that reconnected between abortDangling's description of the
// transactions and its markers — it takes its transactional id over
// (same producer id, a new epoch) and produces — had its new, open
// transaction aborted by a marker meant for the killed process's; its
// commit then found nothing open and the records it was told were
// committed stayed aborted: lost, with no error anywhere (a window of a
// few milliseconds, found by reading the recovery after the cluster
// walkthrough of 2026-11-30). Only connections from gateSource, the
// recovery client's, are served until the gate opens; the others are
// accepted by the kernel and served once it is open: a client sees a
// slower first answer, never an error. The gate is used only by a Start
// that recovers; a clean Start listens as before.
type connGate struct {
	opened chan struct{}
	once   sync.Once
}

func newConnGate() *connGate { return &connGate{opened: make(chan struct{})} }

// open lets every connection through, those held included. It is
// idempotent.
func (g *connGate) open() { g.once.Do(func() { close(g.opened) }) }

func (g *connGate) isOpen() bool {
	select {
	case <-g.opened:
		return true
	default:
		return false
	}
}

// listen is kfake's ListenFn: net.Listen, gated.
func (g *connGate) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	gl := &gatedListener{Listener: ln, gate: g, ready: make(chan net.Conn), failed: make(chan struct{}), closed: make(chan struct{})}
	go gl.acceptLoop()
	return gl, nil
}

// dial is the recovery client's dialer (kgo.Dialer): from gateSource,
// which the gate lets through. Where the system cannot dial from that
// address (only Linux routes all of 127.0.0.0/8 to the loopback device
// by default), the gate cannot tell the recovery client apart: it opens,
// and the recovery runs as it did before the gate, with the window.
func (g *connGate) dial(ctx context.Context, network, host string) (net.Conn, error) {
	if !g.isOpen() {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: gateSource}}
		c, err := d.DialContext(ctx, network, host)
		if !errors.Is(err, syscall.EADDRNOTAVAIL) {
			return c, err
		}
		g.open()
	}
	var d net.Dialer
	return d.DialContext(ctx, network, host)
}

// gatedListener serves connections from gateSource at once and the
// others once its gate is open.
type gatedListener struct {
	net.Listener
	gate      *connGate
	ready     chan net.Conn // connections to hand to Accept
	failed    chan struct{} // closed when the underlying Accept failed, err set
	err       error
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *gatedListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.err = err
			close(l.failed)
			return
		}
		if l.gate.isOpen() || admitted(c) {
			l.deliver(c)
			continue
		}
		go func() {
			select {
			case <-l.gate.opened:
				l.deliver(c)
			case <-l.closed:
				c.Close()
			}
		}()
	}
}

// admitted reports whether c comes from gateSource.
func admitted(c net.Conn) bool {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.Equal(gateSource)
}

func (l *gatedListener) deliver(c net.Conn) {
	select {
	case l.ready <- c:
	case <-l.closed:
		c.Close()
	}
}

// Accept implements net.Listener.
func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.failed:
		return nil, l.err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; connections still held are closed.
func (l *gatedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
