package events

// ParseGeneric runs the generic path of ParseEvent alone (no fast path),
// the baseline of BenchmarkParseEvent.
func ParseGeneric(raw []byte) (Envelope, error) {
	set, err := loadSchemas()
	if err != nil {
		return Envelope{}, err
	}
	return parseSlow(set, raw, true)
}

// PayloadTypes is the producer types' typed payloads (payloadTypes), for
// FuzzPayloadDecoders.
var PayloadTypes = payloadTypes
