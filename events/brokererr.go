package events

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokerClosedConnection is what ExplainBrokerError says in place of
// franz-go's guess when a broker closed a connection as soon as a request
// was sent on it.
const BrokerClosedConnection = "the broker closed the connection as soon as a request was sent: it is down or restarting (if it is up and this persists, check the client's TLS and SASL settings against the broker's)"

// ExplainBrokerError returns err with franz-go's guess for a connection
// a broker closed at once (kgo.ErrFirstReadEOF: "is SASL missing?", "is
// TLS misconfigured?") replaced by BrokerClosedConnection; any other error
// as it is. A broker that is killed or restarted while a client holds a
// connection to it gives that error too, and on a service without TLS or
// SASL the guess sends an operator the wrong way (an SRE drill: GET
// /v1/sessions/{id}/events asked "is SASL missing?" after a SIGKILL of
// the broker). errors.Is and errors.As still see err.
func ExplainBrokerError(err error) error {
	var fe *kgo.ErrFirstReadEOF
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	return &explainedError{err: err, msg: strings.Replace(err.Error(), fe.Error(), BrokerClosedConnection, 1)}
}

type explainedError struct {
	err error
	msg string
}

func (e *explainedError) Error() string { return e.msg }
func (e *explainedError) Unwrap() error { return e.err }
