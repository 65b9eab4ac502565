// Package schemas holds the JSON Schemas (draft 2020-12) of Chronicle's
// events, embedded into every binary so validation never depends on files
// next to the executable.
//
// One file per event type, named after the type including its version
// (for example coordination.session.started.v1.json), plus
// cloudevent.json for the CloudEvents 1.0 envelope with Chronicle's
// extension attributes. A type's schema describes its data and has the
// $id urn:chronicle:schema:<type> (events.SchemaURI); a file is all it
// takes here, and the type itself is registered in package events (the
// README's "Adding an event type").
package schemas

import "embed"

// FS holds every *.json schema of this directory.
//
//go:embed *.json
var FS embed.FS
