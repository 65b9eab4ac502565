package kafkapubsub

import (
	"fmt"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger forwards franz-go's warnings and errors to a Watermill logger:
// errors as Error, warnings as Info. Pass kgo.WithLogger in ExtraOpts for
// more detail.
// A repeat of an error or warning within RepeatWindow (the same message
// and error) is held back and counted (gate; nil lets every line through).
type kgoLogger struct {
	logger watermill.LoggerAdapter
	gate   *repeatGate
}

func (l kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make(watermill.LogFields, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields[fmt.Sprint(keyvals[i])] = keyvals[i+1]
	}
	if level <= kgo.LogLevelWarn {
		ok, held := l.gate.allow(repeatKey(msg, fields["err"]))
		if !ok {
			return
		}
		if held > 0 {
			fields["repeated"] = held
		}
	}
	switch level {
	case kgo.LogLevelError:
		l.logger.Error("franz-go: "+msg, nil, fields)
	case kgo.LogLevelWarn:
		l.logger.Info("franz-go: "+msg, fields)
	default:
		l.logger.Debug("franz-go: "+msg, fields)
	}
}

func orNop(logger watermill.LoggerAdapter) watermill.LoggerAdapter {
	if logger == nil {
		return watermill.NopLogger{}
	}
	return logger
}
