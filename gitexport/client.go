package gitexport

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
	"os"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/sigv4"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Client runs export and import against a gateway's control API with the
// owner's credentials: the gateway streams the repository and the client
// writes (or reads) the Git repository on its own disk.
type Client struct {
	Endpoint    string // http(s)://host:port
	Credentials aws.Credentials
	Region      string       // signing region; "" means us-east-1
	HTTP        *http.Client // nil means one without a timeout
}

// RemoteError is an error answer of the gateway.
type RemoteError struct {
	Status    int
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

func (e *RemoteError) Error() string { return e.Code + ": " + e.Message }

// Unwrap makes a RemoteError match ErrRemote.
func (e *RemoteError) Unwrap() error { return ErrRemote }

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{}
}

func (c *Client) region() string {
	if c.Region == "" {
		return "us-east-1"
	}
	return c.Region
}

// Export writes repository repo as a bare Git repository at dest, which
// must not exist or be empty; on failure nothing is left there.
func (c *Client) Export(ctx context.Context, repo, dest string) (*apiv1.Report, error) {
	if err := emptyDir(dest); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(dest)
	existed := statErr == nil
	body, _ := json.Marshal(map[string]string{"repo": repo})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Endpoint, "/")+"/_nas/v1/repo/export", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	if err := v4.NewSigner().SignHTTP(ctx, c.Credentials, req, h, "s3", c.region(), time.Now()); err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach gateway at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, remoteError(resp)
	}
	rep, err := WriteGit(ctx, resp.Body, dest)
	if err != nil {
		os.RemoveAll(dest)
		if existed {
			os.Mkdir(dest, 0o755)
		}
		return nil, err
	}
	return rep, nil
}

// Import reads the export at src and creates repository repo from it on
// the gateway. The upload is signed chunk by chunk (aws-chunked), so the
// gateway checks every byte it receives came from these credentials.
func (c *Client) Import(ctx context.Context, src, repo string) (*apiv1.Report, error) {
	if _, err := os.Stat(src); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := strings.TrimSuffix(c.Endpoint, "/") + "/_nas/v1/repo/import?repo=" + url.QueryEscape(repo)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		return nil, err
	}
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/x-nas-dump")
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
	now := time.Now().UTC()
	if err := v4.NewSigner().SignHTTP(ctx, c.Credentials, req, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "s3", c.region(), now); err != nil {
		return nil, err
	}
	seed, ok := strings.CutPrefix(req.Header.Get("Authorization")[strings.LastIndex(req.Header.Get("Authorization"), "Signature="):], "Signature=")
	if !ok {
		return nil, errors.New("signer gave no signature")
	}
	cw := &chunkSigner{w: pw, prev: seed, amzDate: req.Header.Get("X-Amz-Date"),
		scope: now.Format("20060102") + "/" + c.region() + "/s3/aws4_request",
		key:   sigv4.SigningKey(c.Credentials.SecretAccessKey, now.Format("20060102"), c.region(), "s3")}
	readErr := make(chan error, 1)
	var rep *apiv1.Report
	go func() {
		var err error
		rep, err = ReadGit(ctx, src, cw)
		if err == nil {
			err = cw.Close()
		}
		pw.CloseWithError(err)
		readErr <- err
	}()
	resp, err := c.http().Do(req)
	if err != nil {
		pr.CloseWithError(err)
		if rerr := <-readErr; rerr != nil && !errors.Is(rerr, io.ErrClosedPipe) {
			return nil, rerr
		}
		return nil, fmt.Errorf("reach gateway at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		rerr := remoteError(resp)
		pr.CloseWithError(rerr)
		if lerr := <-readErr; lerr != nil && !errors.Is(lerr, ErrRemote) && !errors.Is(lerr, io.ErrClosedPipe) {
			// The local reason (a tampered export found here) is the clearer one.
			return nil, lerr
		}
		return nil, rerr
	}
	if err := <-readErr; err != nil {
		return nil, err
	}
	var out struct {
		Report *apiv1.Report `json:"report"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Report == nil {
		return rep, nil
	}
	return out.Report, nil
}

func remoteError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var doc struct {
		Error *RemoteError `json:"error"`
	}
	if json.Unmarshal(b, &doc) == nil && doc.Error != nil {
		doc.Error.Status = resp.StatusCode
		return doc.Error
	}
	return &RemoteError{Status: resp.StatusCode, Code: resp.Status, Message: strings.TrimSpace(string(b))}
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
