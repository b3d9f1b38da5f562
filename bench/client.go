package bench

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Client is the load generator's S3 client: raw HTTP requests signed with
// the AWS SDK's SigV4 signer and an unsigned payload. The full SDK client
// spends tens of microseconds and dozens of allocations per request in its
// middleware stack, which on a small machine shared with the server would be
// measured as server time on 4 KiB objects; signing by hand keeps the
// client's share small and the same for every target. Every target gets the
// same client and transport.
type Client struct {
	Endpoint string // scheme://host:port, no trailing slash
	Region   string
	Creds    aws.Credentials
	HTTP     *http.Client
	signer   *v4.Signer
}

// NewClient returns a Client for an S3 endpoint.
func NewClient(endpoint, region string, creds aws.Credentials) *Client {
	if region == "" {
		region = "us-east-1"
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		WriteBufferSize:     256 << 10,
		ReadBufferSize:      256 << 10,
	}
	return &Client{
		Endpoint: strings.TrimSuffix(endpoint, "/"),
		Region:   region,
		Creds:    creds,
		HTTP:     &http.Client{Transport: tr},
		signer:   v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
	}
}

// Close drops idle connections.
func (c *Client) Close() { c.HTTP.CloseIdleConnections() }

// S3Error is an error answer of an S3 endpoint.
type S3Error struct {
	Status  int
	Code    string
	Message string
	Op      string
}

func (e *S3Error) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.Op, e.Status, e.Code, e.Message)
}

// ErrNotFound is matched (errors.Is) by S3 errors with status 404.
var ErrNotFound = errors.New("not found")

// Is makes a 404 S3Error match ErrNotFound.
func (e *S3Error) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

func objectURL(endpoint, bucket, key string, q url.Values) string {
	u := endpoint + "/" + bucket
	if key != "" {
		u += "/" + escapeKey(key)
	}
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	return u
}

// escapeKey percent-encodes a key for a path, keeping '/'.
func escapeKey(k string) string {
	parts := strings.Split(k, "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(url.PathEscape(p), "+", "%2B")
	}
	return strings.Join(parts, "/")
}

// Do signs and sends a request; body may be nil. hdr adds headers. The
// caller closes the response body; an error status is returned as *S3Error
// with the body consumed.
func (c *Client) Do(ctx context.Context, op, method, rawURL string, hdr http.Header, body io.Reader, size int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	if err := c.signer.SignHTTP(ctx, c.Creds, req, "UNSIGNED-PAYLOAD", "s3", c.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("%s: sign: %w", op, err)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, readS3Error(op, resp)
	}
	return resp, nil
}

func readS3Error(op string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	_ = xml.Unmarshal(b, &doc)
	if doc.Code == "" {
		doc.Code = http.StatusText(resp.StatusCode)
	}
	return &S3Error{Status: resp.StatusCode, Code: doc.Code, Message: doc.Message, Op: op}
}

// drain reads and closes a response body, returning the bytes read.
func drain(resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// CreateBucket creates a bucket; an existing bucket the caller owns is fine.
func (c *Client) CreateBucket(ctx context.Context, bucket string) error {
	resp, err := c.Do(ctx, "create bucket "+bucket, http.MethodPut, objectURL(c.Endpoint, bucket, "", nil), nil, http.NoBody, 0)
	var se *S3Error
	if errors.As(err, &se) && (se.Code == "BucketAlreadyOwnedByYou" || se.Code == "BucketAlreadyExists") {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = drain(resp)
	return err
}

// Put uploads an object in one request.
func (c *Client) Put(ctx context.Context, bucket, key string, body io.Reader, size int64) error {
	resp, err := c.Do(ctx, "put "+key, http.MethodPut, objectURL(c.Endpoint, bucket, key, nil), nil, body, size)
	if err != nil {
		return err
	}
	_, err = drain(resp)
	return err
}

// Get downloads an object and returns its length.
func (c *Client) Get(ctx context.Context, bucket, key string) (int64, error) {
	resp, err := c.Do(ctx, "get "+key, http.MethodGet, objectURL(c.Endpoint, bucket, key, nil), nil, nil, 0)
	if err != nil {
		return 0, err
	}
	n, err := drain(resp)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("get %s: %d of %d bytes", key, n, resp.ContentLength)
	}
	return n, err
}

// Head returns an object's length.
func (c *Client) Head(ctx context.Context, bucket, key string) (int64, error) {
	resp, err := c.Do(ctx, "head "+key, http.MethodHead, objectURL(c.Endpoint, bucket, key, nil), nil, nil, 0)
	if err != nil {
		return 0, err
	}
	_, err = drain(resp)
	return resp.ContentLength, err
}

// Delete deletes an object.
func (c *Client) Delete(ctx context.Context, bucket, key string) error {
	resp, err := c.Do(ctx, "delete "+key, http.MethodDelete, objectURL(c.Endpoint, bucket, key, nil), nil, nil, 0)
	if err != nil {
		return err
	}
	_, err = drain(resp)
	return err
}

// Copy copies an object within the endpoint (CopyObject).
func (c *Client) Copy(ctx context.Context, bucket, key, srcBucket, srcKey string) error {
	h := http.Header{}
	h.Set("X-Amz-Copy-Source", "/"+srcBucket+"/"+escapeKey(srcKey))
	resp, err := c.Do(ctx, "copy "+key, http.MethodPut, objectURL(c.Endpoint, bucket, key, nil), h, http.NoBody, 0)
	if err != nil {
		return err
	}
	return checkXMLBody("copy "+key, resp, nil)
}

// checkXMLBody reads an XML answer into out (if not nil); an <Error>
// document sent with status 200 (S3 does that for copies and completions)
// is returned as an error.
func checkXMLBody(op string, resp *http.Response, out any) error {
	b, err := readXML(op, resp)
	if err != nil {
		return err
	}
	if out != nil {
		if err := xml.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s: decode answer: %w", op, err)
		}
	}
	return nil
}

// readXML reads and closes an XML answer, returning an <Error> document as
// an error.
func readXML(op string, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	root := bytes.TrimSpace(b)
	if bytes.HasPrefix(root, []byte("<?xml")) {
		if i := bytes.Index(root, []byte("?>")); i >= 0 {
			root = bytes.TrimSpace(root[i+2:])
		}
	}
	if bytes.HasPrefix(root, []byte("<Error>")) {
		var doc struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		_ = xml.Unmarshal(b, &doc)
		return nil, &S3Error{Status: resp.StatusCode, Code: doc.Code, Message: doc.Message, Op: op}
	}
	return b, nil
}

// listPage counts a ListObjectsV2 answer without decoding it: encoding/xml
// costs the client more CPU per key than a fast server spends listing it,
// and on a small machine that CPU is taken from the server being measured.
func listPage(b []byte) (keys, prefixes int, next string, truncated bool) {
	keys = bytes.Count(b, []byte("<Contents>"))
	prefixes = bytes.Count(b, []byte("<CommonPrefixes>"))
	truncated = bytes.Contains(b, []byte("<IsTruncated>true</IsTruncated>"))
	const open, end = "<NextContinuationToken>", "</NextContinuationToken>"
	if i := bytes.Index(b, []byte(open)); i >= 0 {
		rest := b[i+len(open):]
		if j := bytes.Index(rest, []byte(end)); j >= 0 {
			next = html.UnescapeString(string(rest[:j]))
		}
	}
	return keys, prefixes, next, truncated
}

// ListPage is what List reports.
type ListPage struct {
	Keys, Prefixes, Pages int
}

// List lists every key (ListObjectsV2, every page) under prefix, with an
// optional delimiter.
func (c *Client) List(ctx context.Context, bucket, prefix, delimiter string, maxKeys int) (ListPage, error) {
	var lp ListPage
	token := ""
	for {
		q := url.Values{"list-type": {"2"}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if delimiter != "" {
			q.Set("delimiter", delimiter)
		}
		if maxKeys > 0 {
			q.Set("max-keys", strconv.Itoa(maxKeys))
		}
		if token != "" {
			q.Set("continuation-token", token)
		}
		resp, err := c.Do(ctx, "list "+bucket, http.MethodGet, objectURL(c.Endpoint, bucket, "", q), nil, nil, 0)
		if err != nil {
			return lp, err
		}
		b, err := readXML("list "+bucket, resp)
		if err != nil {
			return lp, err
		}
		keys, prefixes, next, truncated := listPage(b)
		lp.Pages++
		lp.Keys += keys
		lp.Prefixes += prefixes
		if !truncated || next == "" {
			return lp, nil
		}
		token = next
	}
}

// CreateUpload starts a multipart upload and returns its ID.
func (c *Client) CreateUpload(ctx context.Context, bucket, key string) (string, error) {
	resp, err := c.Do(ctx, "create upload "+key, http.MethodPost, objectURL(c.Endpoint, bucket, key, url.Values{"uploads": {""}}), nil, http.NoBody, 0)
	if err != nil {
		return "", err
	}
	var doc struct {
		UploadID string `xml:"UploadId"`
	}
	if err := checkXMLBody("create upload "+key, resp, &doc); err != nil {
		return "", err
	}
	return doc.UploadID, nil
}

// UploadPart uploads one part and returns its ETag.
func (c *Client) UploadPart(ctx context.Context, bucket, key, id string, n int, body io.Reader, size int64) (string, error) {
	q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {id}}
	resp, err := c.Do(ctx, "upload part", http.MethodPut, objectURL(c.Endpoint, bucket, key, q), nil, body, size)
	if err != nil {
		return "", err
	}
	if _, err := drain(resp); err != nil {
		return "", err
	}
	return resp.Header.Get("ETag"), nil
}

// CompleteUpload completes a multipart upload from its parts' ETags (part
// i+1 has etags[i]).
func (c *Client) CompleteUpload(ctx context.Context, bucket, key, id string, etags []string) error {
	var b strings.Builder
	b.WriteString("<CompleteMultipartUpload>")
	for i, e := range etags {
		fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, e)
	}
	b.WriteString("</CompleteMultipartUpload>")
	body := b.String()
	q := url.Values{"uploadId": {id}}
	resp, err := c.Do(ctx, "complete upload "+key, http.MethodPost, objectURL(c.Endpoint, bucket, key, q), nil, strings.NewReader(body), int64(len(body)))
	if err != nil {
		return err
	}
	return checkXMLBody("complete upload "+key, resp, nil)
}

// EmptyBucket deletes every object of a bucket and then the bucket, for
// cleaning up after a run against an endpoint the harness does not own.
func (c *Client) EmptyBucket(ctx context.Context, bucket string) error {
	for {
		q := url.Values{"list-type": {"2"}, "max-keys": {"1000"}}
		resp, err := c.Do(ctx, "list "+bucket, http.MethodGet, objectURL(c.Endpoint, bucket, "", q), nil, nil, 0)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var doc struct {
			Contents []struct {
				Key string `xml:"Key"`
			} `xml:"Contents"`
		}
		if err := checkXMLBody("list "+bucket, resp, &doc); err != nil {
			return err
		}
		if len(doc.Contents) == 0 {
			break
		}
		keys := make([]string, len(doc.Contents))
		for i, o := range doc.Contents {
			keys[i] = o.Key
		}
		if err := c.DeleteMany(ctx, bucket, keys); err != nil {
			return err
		}
	}
	resp, err := c.Do(ctx, "delete bucket "+bucket, http.MethodDelete, objectURL(c.Endpoint, bucket, "", nil), nil, nil, 0)
	if err != nil {
		return err
	}
	_, err = drain(resp)
	return err
}

// DeleteMany deletes up to 1,000 keys in one DeleteObjects request.
func (c *Client) DeleteMany(ctx context.Context, bucket string, keys []string) error {
	var b bytes.Buffer
	b.WriteString("<Delete><Quiet>true</Quiet>")
	for _, k := range keys {
		b.WriteString("<Object><Key>")
		_ = xml.EscapeText(&b, []byte(k))
		b.WriteString("</Key></Object>")
	}
	b.WriteString("</Delete>")
	sum := md5.Sum(b.Bytes())
	h := http.Header{}
	h.Set("Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
	h.Set("Content-Type", "application/xml")
	resp, err := c.Do(ctx, "delete objects", http.MethodPost, objectURL(c.Endpoint, bucket, "", url.Values{"delete": {""}}), h, bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		return err
	}
	var doc struct {
		Errors []struct {
			Key  string `xml:"Key"`
			Code string `xml:"Code"`
		} `xml:"Error"`
	}
	if err := checkXMLBody("delete objects", resp, &doc); err != nil {
		return err
	}
	if len(doc.Errors) > 0 {
		return fmt.Errorf("delete objects: %s: %s (and %d more)", doc.Errors[0].Key, doc.Errors[0].Code, len(doc.Errors)-1)
	}
	return nil
}
