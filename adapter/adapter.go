// Package adapter is the protocol between the gateway and a source
// adapter: a program the owner installs on the gateway's host that shows
// any listable data (an HTTP index, database tables) as objects, attached
// with `nas source add REPO exec:/PATH/TO/ADAPTER`.
//
// The gateway starts the adapter with the arguments given at attach, in
// the gateway's environment without any NAS_* or AWS_* variable, and
// speaks to it over stdin and stdout; what it writes to stderr goes to the
// gateway's log. The gateway sends one request at a time, each a JSON
// object on one line; the adapter answers each with one JSON line, and a
// read's answer is followed by exactly the bytes it announces:
//
//	> {"op":"hello","protocol":1}
//	< {"protocol":1,"name":"http"}
//	> {"op":"list","after":"","limit":1000}
//	< {"objects":[{"key":"a.csv","size":12,"version":"\"e1\""}],"more":false}
//	> {"op":"stat","key":"a.csv"}
//	< {"object":{"key":"a.csv","size":12,"version":"\"e1\""}}
//	> {"op":"read","key":"a.csv","version":"\"e1\"","offset":0,"length":12}
//	< {"length":12,"version":"\"e1\""}
//	< 12 raw bytes
//
// A list answers the objects whose key is greater than after, in byte
// order of keys, at most limit of them, and more when others follow. An
// object's version is a token that changes whenever its bytes do (an ETag,
// a modification time, a snapshot ID); the gateway pins it. A read names
// the pinned version: an adapter whose object is no longer that version
// answers the error "changed" and no bytes. A read answers length bytes,
// fewer only where the object ends. An error is {"error":{"code",
// "message"}} with a code of Codes.
//
// The gateway checks every answer (keys in order, sizes, lengths,
// versions, the SHA-256 of a whole read when the adapter gave one), kills
// an adapter that stalls longer than its timeout or breaks the protocol,
// and starts a fresh one for the next request. It never sends a request a
// reader made: only reads of pinned entries a lease was allowed to read.
package adapter

import (
	"time"
)

// Protocol is the version of the protocol this package speaks.
const Protocol = 1

// Limits of what a message may hold.
const (
	MaxLine    = 4 << 20 // bytes of one JSON line (a list page)
	MaxKey     = 1024    // bytes of a key, as S3
	MaxVersion = 1024    // bytes of a version token
	MaxPage    = 1000    // objects in one list answer
	MaxSize    = 5 << 40 // an object's size, S3's 5 TiB
)

// Ops of Request.
const (
	OpHello = "hello"
	OpList  = "list"
	OpStat  = "stat"
	OpRead  = "read"
)

// Codes of Error.
const (
	CodeNotFound    = "not_found"   // no such object (now)
	CodeChanged     = "changed"     // the object is not the version asked for
	CodeUnavailable = "unavailable" // what the adapter reads from failed; try again later
	CodeInvalid     = "invalid"     // the request was malformed
)

// Request is what the gateway sends, one per line.
type Request struct {
	Op       string `json:"op"`
	Protocol int    `json:"protocol,omitempty"` // hello
	After    string `json:"after,omitempty"`    // list
	Limit    int    `json:"limit,omitempty"`    // list
	Key      string `json:"key,omitempty"`      // stat, read
	Version  string `json:"version,omitempty"`  // read
	Offset   int64  `json:"offset,omitempty"`   // read
	Length   int64  `json:"length,omitempty"`   // read
}

// Response is what the adapter answers, one per line; a read's is
// followed by Length raw bytes.
type Response struct {
	Error    *Error   `json:"error,omitempty"`
	Protocol int      `json:"protocol,omitempty"` // hello
	Name     string   `json:"name,omitempty"`     // hello
	Objects  []Object `json:"objects,omitempty"`  // list
	More     bool     `json:"more,omitempty"`     // list
	Object   *Object  `json:"object,omitempty"`   // stat
	Length   int64    `json:"length,omitempty"`   // read
	Version  string   `json:"version,omitempty"`  // read: the version the bytes are of
}

// Object is one object an adapter shows.
type Object struct {
	Key         string    `json:"key"`
	Size        int64     `json:"size"`
	Version     string    `json:"version"`
	ModTime     time.Time `json:"mtime,omitzero"`
	ContentType string    `json:"content_type,omitempty"`
	// SHA256 is the hex SHA-256 of the bytes, when the adapter knows it
	// without reading them; a whole read is checked against it.
	SHA256 string `json:"sha256,omitempty"`
}

// Error is a failed request.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
