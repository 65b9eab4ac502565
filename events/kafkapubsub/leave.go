package kafkapubsub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chronicle-dev/chronicle/events/kafkaconn"
)

// ErrLeaveCut is wrapped by CloseMember's error when the graceful leave
// did not finish within its bound and was cut.
var ErrLeaveCut = errors.New("kafkapubsub: the group member's graceful leave did not finish in time (a rebalance in flight) and was cut")

// CloseMember closes cl, a consumer group member of group created with
// kgo.WithContext(ctx) whose ctx cancel cancels, waiting at most wait for
// franz-go's graceful leave (Client.Close, which waits for a rebalance in
// flight: up to the group's rebalance timeout, 60 s by default, behind a
// member that does not rejoin). It returns nil when that leave finished
// within wait. Otherwise it cancels ctx, which ends the member's requests
// in flight (a JoinGroup or SyncGroup the broker holds) and lets Close
// return, and sends the member's LeaveGroup itself through a short-lived
// client built from brokers and the connection options among opts
// (producer, consumer and group options are dropped), so that the group
// does not keep the member until its session timeout. Each of these two
// steps waits at most wait more. The error then wraps ErrLeaveCut, and the
// LeaveGroup's failure if it failed (the group then keeps the member until
// its session timeout; a Close that did not return in time goes on in the
// background). A cut leave skips the revoke's final commit: a consumer
// that commits in OnPartitionsRevoked loses the commit of what it
// processed since its last one. wait ≤ 0 means DefaultLeaveTimeout.
//
// closed is closed once cl.Close returned: after a cut, a callback of the
// member's that was running (OnPartitionsRevoked…) may still run until
// then, so a caller whose callbacks use a resource it closes next waits
// for closed first.
func CloseMember(cl *kgo.Client, cancel context.CancelFunc, group string, wait time.Duration, brokers []string, opts ...kgo.Opt) (closed <-chan struct{}, err error) {
	if wait <= 0 {
		wait = DefaultLeaveTimeout
	}
	done := make(chan struct{})
	closed = done
	go func() {
		defer close(done)
		cl.Close()
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
		cancel()
		return closed, nil
	case <-timer.C:
	}
	memberID, _ := cl.GroupMetadata() // before the cut: it forgets the member
	cancel()
	errs := []error{fmt.Errorf("%w after %s", ErrLeaveCut, wait)}
	if memberID != "" {
		if err := leaveGroup(group, memberID, wait, brokers, opts); err != nil {
			errs = append(errs, fmt.Errorf("the member's own LeaveGroup failed (the group keeps it until its session timeout): %w", err))
		}
	}
	timer.Reset(wait)
	select {
	case <-done:
	case <-timer.C:
		errs = append(errs, fmt.Errorf("the client's Close had not returned %s after the cut; it goes on in the background", wait))
	}
	return closed, errors.Join(errs...)
}

// leaveGroup sends group's LeaveGroup for memberID through a new client.
func leaveGroup(group, memberID string, wait time.Duration, brokers []string, opts []kgo.Opt) error {
	cl, err := kafkaconn.NewClient(brokers, connectionOpts(opts)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberID
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = memberID
	m.Reason = kmsg.StringPtr("closing: the graceful leave waited too long for a rebalance in flight")
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, m := range resp.Members {
		if err := kerr.ErrorForCode(m.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return err
		}
	}
	return nil
}
