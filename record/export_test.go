package record

import "crypto/sha256"

// encodeRecord returns the stored value of e: its body followed by e.Hash.
func encodeRecord(e *Event) []byte {
	b := appendBody(make([]byte, 0, encodedSize(e)+sha256.Size), e)
	return append(b, e.Hash[:]...)
}
