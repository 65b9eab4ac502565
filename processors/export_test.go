package processors

// DeadLetterRecord exposes deadLetterRecord to the external tests.
var DeadLetterRecord = deadLetterRecord
