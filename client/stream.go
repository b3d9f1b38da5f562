package client

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/sigv4"
)

// Export and import stream a repository (apiv1.DumpContentType) to and
// from the gateway: repo/export answers with the stream; repo/import takes
// it as an aws-chunked body signed chunk by chunk, so the gateway checks
// that every byte it loads came from these credentials. Neither is
// retried: a stream is not replayable.

// Export asks for repository repo and hands the stream to fn, which must
// read what it needs before returning.
func (c *Client) Export(ctx context.Context, repo string, fn func(io.Reader) error) error {
	body, err := json.Marshal(apiv1.RepoExportRequest{Repo: repo})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	r := request{method: http.MethodPost, url: c.cfg.Endpoint + apiv1.Prefix + apiv1.RepoExportRequest{}.Op(),
		header: http.Header{"Content-Type": {"application/json"}},
		body:   func() io.Reader { return bytes.NewReader(body) }, size: int64(len(body)),
		payload: hex.EncodeToString(sum[:])}
	return c.do(ctx, r, func(resp *http.Response) error { return fn(resp.Body) })
}

// Import creates repository repo from the stream write writes. When the
// gateway refuses the stream and write failed too, write's error is
// returned: the local reason (a tampered export found while reading it) is
// the clearer one.
func (c *Client) Import(ctx context.Context, repo string, write func(io.Writer) error) (*apiv1.RepoImportResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := c.cfg.Endpoint + apiv1.Prefix + "repo/import?repo=" + url.QueryEscape(repo)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		return nil, err
	}
	req.ContentLength = -1
	req.Header.Set("Content-Type", apiv1.DumpContentType)
	req.Header.Set("Content-Encoding", "aws-chunked")
	// The body goes out only once the gateway has accepted the request: a
	// refused import is answered, not reset while its body arrives.
	req.Header.Set("Expect", "100-continue")
	const mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	req.Header.Set("x-amz-content-sha256", mode)
	now := time.Now().UTC()
	if err := c.signer.SignHTTP(ctx, c.cfg.Credentials, req, mode, "s3", c.cfg.Region, now); err != nil {
		return nil, err
	}
	auth := req.Header.Get("Authorization")
	seed, ok := strings.CutPrefix(auth[strings.LastIndex(auth, "Signature="):], "Signature=")
	if !ok {
		return nil, errors.New("the signer gave no signature")
	}
	cw := &chunkSigner{w: pw, prev: seed, amzDate: req.Header.Get("X-Amz-Date"),
		scope: now.Format("20060102") + "/" + c.cfg.Region + "/s3/aws4_request",
		key:   sigv4.SigningKey(c.cfg.Credentials.SecretAccessKey, now.Format("20060102"), c.cfg.Region, "s3")}
	written := make(chan error, 1)
	go func() {
		err := write(cw)
		if err == nil {
			err = cw.Close()
		}
		pw.CloseWithError(err)
		written <- err
	}()
	resp, err := c.http.Do(req)
	if err != nil {
		pr.CloseWithError(err)
		if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
			return nil, werr
		}
		return nil, &Error{Op: "repo/import", Code: "Unreachable", Message: err.Error(), err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rerr := parseError("repo/import", resp)
		pr.CloseWithError(rerr)
		if werr := <-written; werr != nil && !errors.Is(werr, rerr) && !errors.Is(werr, io.ErrClosedPipe) {
			return nil, werr
		}
		return nil, rerr
	}
	if err := <-written; err != nil {
		return nil, err
	}
	var out apiv1.RepoImportResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("repo/import: decode answer: %w", err)
	}
	return &out, nil
}

// chunkSigner frames what is written to it as an aws-chunked body whose
// chunks are signed in a chain seeded by the request's signature
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD).
type chunkSigner struct {
	w       io.Writer
	key     []byte
	amzDate string
	scope   string
	prev    string
	buf     []byte
	closed  bool
}

// signedChunk is the payload size of each signed chunk.
const signedChunk = 1 << 20

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func (c *chunkSigner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(len(p), signedChunk-len(c.buf))
		c.buf = append(c.buf, p[:take]...)
		p = p[take:]
		if len(c.buf) == signedChunk {
			if err := c.chunk(c.buf); err != nil {
				return 0, err
			}
			c.buf = c.buf[:0]
		}
	}
	return n, nil
}

func (c *chunkSigner) chunk(data []byte) error {
	sum := sha256.Sum256(data)
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.amzDate + "\n" + c.scope + "\n" + c.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(sum[:])
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(sts))
	c.prev = hex.EncodeToString(m.Sum(nil))
	if _, err := fmt.Fprintf(c.w, "%x;chunk-signature=%s\r\n", len(data), c.prev); err != nil {
		return err
	}
	if _, err := c.w.Write(data); err != nil {
		return err
	}
	_, err := io.WriteString(c.w, "\r\n")
	return err
}

// Close writes the last data chunk and the final empty chunk.
func (c *chunkSigner) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if len(c.buf) > 0 {
		if err := c.chunk(c.buf); err != nil {
			return err
		}
	}
	if err := c.chunk(nil); err != nil {
		return err
	}
	_, err := io.WriteString(c.w, "\r\n")
	return err
}
