package sigv4

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Limits of the aws-chunked decoder. Memory per body is one pooled
// bufio.Reader of bufSize plus at most maxTrailerBytes of trailers.
const (
	bufSize         = 64 << 10 // read buffer; large reads bypass it
	maxChunkLine    = 4 << 10  // a chunk header or trailer line
	maxTrailerBytes = 16 << 10 // the whole trailer section
	maxTrailingCRLF = 4        // stray CR/LF bytes tolerated after the end
	trailerSigName  = "x-amz-trailer-signature"
	chunkSigExt     = "chunk-signature"
)

// emptyHashLine sits between the previous signature and the data hash in
// a chunk string to sign.
var emptyHashLine = []byte("\n" + emptySHA256 + "\n")

var bufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// decoder states.
const (
	stHeader = iota // next comes a chunk header line
	stData          // inside chunk data; left bytes remain
	stDone          // final chunk and trailers consumed
)

// chunkedReader decodes an aws-chunked body:
//
//	hex-size[;chunk-signature=<64 hex>]\r\n <size bytes> \r\n   (repeated)
//	0[;chunk-signature=<64 hex>]\r\n
//	[name:value\r\n ...] [x-amz-trailer-signature:<64 hex>\r\n]
//	\r\n
//
// Chunk data is hashed as it streams to the caller and the chunk's
// signature is checked when its last byte has been read, in the same Read
// call. Chunk extensions other than chunk-signature are ignored, optional
// spaces around the size and extensions are tolerated, a bare LF may end a
// header or trailer line, and blank lines may precede the trailer
// signature (minio-go writes one).
//
// Memory: about 400 bytes of state plus the pooled 64 KiB buffer, returned
// to the pool as soon as the body ends, fails or is closed; trailers are
// copied out and capped at maxTrailerBytes.
type chunkedReader struct {
	src io.ReadCloser
	br  *bufio.Reader // pooled; nil once the reader finished or was closed

	signed        bool // chunks carry chunk-signature
	trailers      bool // a trailer section may follow the final chunk
	signedTrailer bool // the trailer section ends with x-amz-trailer-signature

	// Signature chaining, only when signed.
	mac       hash.Hash // HMAC-SHA256 keyed with the request's signing key
	sha       hash.Hash // SHA-256 of the current chunk's data
	chunkPre  []byte    // "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n"
	trailPre  []byte    // "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n"
	prevSig   [64]byte  // hex of the previous signature (seed first)
	chunkSig  [32]byte  // signature claimed by the current chunk header
	sumBuf    [32]byte  // scratch for digests, kept here so they do not escape
	hexBuf    [64]byte  // scratch for hex digests
	chunkNum  int       // 1-based index of the current chunk, for errors
	state     int
	left      int64 // data bytes left in the current chunk
	decoded   int64 // data bytes returned so far
	want      int64 // x-amz-decoded-content-length, -1 unknown
	err       error // sticky; io.EOF once complete
	trailer   http.Header
	trailerSz int
}

// newChunkedReader decodes the aws-chunked body src of mode, whose
// payload is want bytes (-1 when unknown); sign enables signature checks.
func newChunkedReader(src io.ReadCloser, mode PayloadMode, want int64) *chunkedReader {
	br := bufPool.Get().(*bufio.Reader)
	br.Reset(src)
	return &chunkedReader{
		src:           src,
		br:            br,
		trailers:      mode == StreamingTrailer || mode == StreamingUnsignedTrailer,
		signedTrailer: mode == StreamingTrailer,
		want:          want,
	}
}

// sign enables chunk signature checks, chained from the seed signature of
// the request.
func (c *chunkedReader) sign(key []byte, amzDate, scope string, seed [32]byte) {
	c.signed = true
	c.mac = hmac.New(sha256.New, key)
	c.sha = sha256.New()
	c.chunkPre = []byte("AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" + scope + "\n")
	c.trailPre = []byte("AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n")
	hex.Encode(c.prevSig[:], seed[:])
}

// Read returns decoded payload bytes. See Result.Body for when they may be
// trusted.
func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.state == stHeader {
		if err := c.advance(); err != nil {
			return 0, c.fail(err)
		}
		if c.state == stDone {
			return 0, c.err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	if n > 0 {
		if c.signed {
			c.sha.Write(p[:n])
		}
		c.left -= int64(n)
		c.decoded += int64(n)
	}
	if err != nil {
		if err == io.EOF {
			err = fmt.Errorf("%w: body ends inside chunk %d", ErrIncompleteBody, c.chunkNum)
		} else {
			err = bodyError(err)
		}
		return n, c.fail(err)
	}
	if c.left == 0 {
		if err := c.advance(); err != nil {
			return n, c.fail(err)
		}
		if c.state == stDone {
			return n, c.err
		}
	}
	return n, nil
}

// Close closes the underlying body; later Reads fail.
func (c *chunkedReader) Close() error {
	if c.err == nil {
		c.err = http.ErrBodyReadAfterClose
	}
	c.release()
	return c.src.Close()
}

// fail records a terminal error.
func (c *chunkedReader) fail(err error) error {
	c.err = err
	c.release()
	return err
}

// release returns the buffered reader to the pool.
func (c *chunkedReader) release() {
	if c.br != nil {
		c.br.Reset(nil)
		bufPool.Put(c.br)
		c.br = nil
	}
}

// advance ends the current chunk (if any) and reads the next header; after
// the final chunk it reads the trailers and marks the reader done.
func (c *chunkedReader) advance() error {
	if c.state == stData {
		if err := c.endChunk(); err != nil {
			return err
		}
	}
	size, err := c.readHeader()
	if err != nil {
		return err
	}
	c.chunkNum++
	if c.want >= 0 && size > c.want-c.decoded {
		return fmt.Errorf("%w: chunk %d of %d bytes exceeds x-amz-decoded-content-length %d", ErrMalformedChunk, c.chunkNum, size, c.want)
	}
	if c.signed {
		c.sha.Reset()
	}
	if size > 0 {
		c.state, c.left = stData, size
		return nil
	}
	// Final chunk.
	if c.want >= 0 && c.decoded < c.want {
		return fmt.Errorf("%w: %d of %d decoded bytes", ErrIncompleteBody, c.decoded, c.want)
	}
	if err := c.checkChunkSig(); err != nil {
		return err
	}
	if err := c.readTrailers(); err != nil {
		return err
	}
	if err := c.drain(); err != nil {
		return err
	}
	c.state, c.err = stDone, io.EOF
	c.release()
	return nil
}

// endChunk consumes the CRLF after chunk data and checks the signature.
// Unlike header lines, a bare LF is not accepted here: data is binary, and
// clients always write CRLF.
func (c *chunkedReader) endChunk() error {
	crlf, err := c.br.Peek(2)
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("%w: body ends after chunk %d data", ErrIncompleteBody, c.chunkNum)
		}
		return bodyError(err)
	}
	if crlf[0] != '\r' || crlf[1] != '\n' {
		return fmt.Errorf("%w: chunk %d data not followed by CRLF", ErrMalformedChunk, c.chunkNum)
	}
	c.br.Discard(2)
	return c.checkChunkSig()
}

// checkChunkSig compares the current chunk's claimed signature with the
// one computed over its data and moves the chain forward.
func (c *chunkedReader) checkChunkSig() error {
	if !c.signed {
		return nil
	}
	hex.Encode(c.hexBuf[:], c.sha.Sum(c.sumBuf[:0]))
	c.mac.Reset()
	c.mac.Write(c.chunkPre)
	c.mac.Write(c.prevSig[:])
	c.mac.Write(emptyHashLine)
	c.mac.Write(c.hexBuf[:])
	got := c.mac.Sum(c.sumBuf[:0])
	if !hmac.Equal(got, c.chunkSig[:]) {
		return fmt.Errorf("%w: chunk %d", ErrSignatureMismatch, c.chunkNum)
	}
	hex.Encode(c.prevSig[:], got)
	return nil
}

// readLine returns the next line without its LF or CRLF; the slice is only
// valid until the next read. It returns io.EOF, unwrapped, only when the
// body ends cleanly before the line starts.
func (c *chunkedReader) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > maxChunkLine:
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrMalformedChunk, maxChunkLine)
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err == io.EOF:
		return nil, fmt.Errorf("%w: body ends inside a line", ErrIncompleteBody)
	case err != nil:
		return nil, bodyError(err)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readHeader parses "hex-size[;ext[=value]]..." and, for signed bodies,
// stores the chunk-signature.
func (c *chunkedReader) readHeader() (int64, error) {
	line, err := c.readLine()
	if err == io.EOF {
		return 0, fmt.Errorf("%w: body ends before the final chunk", ErrIncompleteBody)
	}
	if err != nil {
		return 0, err
	}
	sizePart, exts, _ := cutByte(line, ';')
	sizePart = trimSpace(sizePart)
	if len(sizePart) == 0 || len(sizePart) > 16 {
		return 0, fmt.Errorf("%w: bad chunk size %q", ErrMalformedChunk, clip(string(sizePart)))
	}
	var size int64
	for _, b := range sizePart {
		d := unhex(b)
		if d < 0 || size > (1<<63-1)>>4 {
			return 0, fmt.Errorf("%w: bad chunk size %q", ErrMalformedChunk, clip(string(sizePart)))
		}
		size = size<<4 | int64(d)
	}
	if !c.signed {
		return size, nil
	}
	found := false
	for len(exts) > 0 {
		var ext []byte
		ext, exts, _ = cutByte(exts, ';')
		name, value, _ := cutByte(ext, '=')
		if string(trimSpace(name)) != chunkSigExt {
			continue
		}
		value = trimSpace(value)
		if found || len(value) != 64 {
			return 0, fmt.Errorf("%w: bad chunk-signature in chunk %d", ErrMalformedChunk, c.chunkNum+1)
		}
		if _, err := hex.Decode(c.chunkSig[:], value); err != nil {
			return 0, fmt.Errorf("%w: bad chunk-signature in chunk %d", ErrMalformedChunk, c.chunkNum+1)
		}
		found = true
	}
	if !found {
		return 0, fmt.Errorf("%w: chunk %d has no chunk-signature", ErrMalformedChunk, c.chunkNum+1)
	}
	return size, nil
}

// readTrailers reads the section after the final chunk, up to and
// including its terminating empty line (or a clean end of body), and
// checks the trailer signature when there is one.
func (c *chunkedReader) readTrailers() error {
	var canon []byte // "name:value\n" lines, hashed for the trailer signature
	sawSig := false
	var trailerSig [32]byte
	for {
		line, err := c.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		c.trailerSz += len(line) + 2
		if c.trailerSz > maxTrailerBytes {
			return fmt.Errorf("%w: trailers exceed %d bytes", ErrMalformedChunk, maxTrailerBytes)
		}
		if len(line) == 0 {
			if c.signedTrailer && !sawSig {
				continue
			}
			break
		}
		if !c.trailers || sawSig {
			return fmt.Errorf("%w: unexpected line after the final chunk", ErrMalformedChunk)
		}
		name, value, ok := cutByte(line, ':')
		name = trimSpace(name)
		if !ok || len(name) == 0 || !tokenBytes(name) {
			return fmt.Errorf("%w: bad trailer line %q", ErrMalformedChunk, clip(string(line)))
		}
		lname := strings.ToLower(string(name))
		value = trimSpace(value)
		if c.signedTrailer && lname == trailerSigName {
			if len(value) != 64 {
				return fmt.Errorf("%w: bad %s", ErrMalformedChunk, trailerSigName)
			}
			if _, err := hex.Decode(trailerSig[:], value); err != nil {
				return fmt.Errorf("%w: bad %s", ErrMalformedChunk, trailerSigName)
			}
			sawSig = true
			continue
		}
		if c.signedTrailer {
			canon = append(canon, lname...)
			canon = append(canon, ':')
			canon = append(canon, value...)
			canon = append(canon, '\n')
		}
		if c.trailer == nil {
			c.trailer = make(http.Header)
		}
		c.trailer.Add(lname, string(value))
	}
	if !c.signedTrailer {
		return nil
	}
	if !sawSig {
		return fmt.Errorf("%w: missing %s", ErrIncompleteBody, trailerSigName)
	}
	return c.checkTrailerSig(canon, &trailerSig)
}

// checkTrailerSig checks the trailer signature sig over canon, the
// trailers' canonical lines, chained to the final chunk's signature.
func (c *chunkedReader) checkTrailerSig(canon []byte, sig *[32]byte) error {
	sum := sha256.Sum256(canon)
	var sumHex [64]byte
	hex.Encode(sumHex[:], sum[:])
	c.mac.Reset()
	c.mac.Write(c.trailPre)
	c.mac.Write(c.prevSig[:])
	c.mac.Write(emptyHashLine[:1])
	c.mac.Write(sumHex[:])
	if !hmac.Equal(c.mac.Sum(c.sumBuf[:0]), sig[:]) {
		return fmt.Errorf("%w: trailer", ErrSignatureMismatch)
	}
	return nil
}

// drain checks that nothing but a few stray CR/LF bytes follow the
// trailer section.
func (c *chunkedReader) drain() error {
	for i := 0; ; i++ {
		b, err := c.br.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return bodyError(err)
		}
		if (b != '\r' && b != '\n') || i >= maxTrailingCRLF {
			return fmt.Errorf("%w: data after the final chunk", ErrMalformedChunk)
		}
	}
}

// cutByte is bytes.Cut for a single separator byte.
func cutByte(s []byte, sep byte) (before, after []byte, found bool) {
	for i, b := range s {
		if b == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, nil, false
}

// trimSpace trims spaces and tabs at both ends of s.
func trimSpace(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// tokenBytes reports whether s is an HTTP token.
func tokenBytes(s []byte) bool {
	for _, b := range s {
		if !isTokenChar(b) {
			return false
		}
	}
	return true
}

// unhex is the value of hex digit b, -1 if it is none.
func unhex(b byte) int {
	switch {
	case '0' <= b && b <= '9':
		return int(b - '0')
	case 'a' <= b && b <= 'f':
		return int(b - 'a' + 10)
	case 'A' <= b && b <= 'F':
		return int(b - 'A' + 10)
	}
	return -1
}
