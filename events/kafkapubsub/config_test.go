package kafkapubsub_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chronicle-dev/chronicle/events/kafkapubsub"
)

func TestConfigValidate(t *testing.T) {
	brokers := []string{"127.0.0.1:9092"}
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"publisher zero value with brokers", kafkapubsub.PublisherConfig{Brokers: brokers}.Validate(), true},
		{"publisher without brokers", kafkapubsub.PublisherConfig{}.Validate(), false},
		{"publisher empty broker", kafkapubsub.PublisherConfig{Brokers: []string{""}}.Validate(), false},
		{"publisher negative MaxAttempts", kafkapubsub.PublisherConfig{Brokers: brokers, MaxAttempts: -1}.Validate(), false},
		{"publisher negative InitialBackoff", kafkapubsub.PublisherConfig{Brokers: brokers, InitialBackoff: -time.Second}.Validate(), false},
		{"subscriber zero value with brokers", kafkapubsub.SubscriberConfig{Brokers: brokers}.Validate(), true},
		{"subscriber NoSleep", kafkapubsub.SubscriberConfig{Brokers: brokers, NackResendSleep: kafkapubsub.NoSleep}.Validate(), true},
		{"subscriber without brokers", kafkapubsub.SubscriberConfig{ConsumerGroup: "g"}.Validate(), false},
		{"subscriber negative NackResendSleep", kafkapubsub.SubscriberConfig{Brokers: brokers, NackResendSleep: -time.Second}.Validate(), false},
	} {
		if tc.ok && tc.err != nil {
			t.Errorf("%s: unexpected error %v", tc.name, tc.err)
		}
		if !tc.ok && !errors.Is(tc.err, kafkapubsub.ErrInvalidConfig) {
			t.Errorf("%s: error %v, want ErrInvalidConfig", tc.name, tc.err)
		}
	}

	if _, err := kafkapubsub.NewPublisher(kafkapubsub.PublisherConfig{}, nil); !errors.Is(err, kafkapubsub.ErrInvalidConfig) {
		t.Errorf("NewPublisher without brokers: %v, want ErrInvalidConfig", err)
	}
	if _, err := kafkapubsub.NewSubscriber(kafkapubsub.SubscriberConfig{}, nil); !errors.Is(err, kafkapubsub.ErrInvalidConfig) {
		t.Errorf("NewSubscriber without brokers: %v, want ErrInvalidConfig", err)
	}
}
