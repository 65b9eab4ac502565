package httpapi

// ScanSessionEvents makes GET /v1/sessions/{id}/events read every session
// by the scan (as a data directory older than the sessionlog index does)
// until the returned function is called.
func ScanSessionEvents() (restore func()) {
	scanOnly.Store(true)
	return func() { scanOnly.Store(false) }
}
