package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// principal is a set of credentials talking to the gateway.
type principal struct {
	endpoint string
	creds    aws.Credentials
	http     *http.Client
}

// apiError is a control-API error answer.
type apiError struct {
	Status int
	Code   string `json:"code"`
	Msg    string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Msg) }

// call POSTs a control-API operation and decodes the answer.
func (p *principal) call(ctx context.Context, op string, args any, out any) error {
	body, _ := json.Marshal(args)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	if p.creds.AccessKeyID != "" {
		if err := v4.NewSigner().SignHTTP(ctx, p.creds, req, h, "s3", "us-east-1", time.Now()); err != nil {
			return err
		}
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		var doc struct {
			Error *apiError `json:"error"`
		}
		if json.Unmarshal(b, &doc) == nil && doc.Error != nil {
			doc.Error.Status = resp.StatusCode
			return doc.Error
		}
		return &apiError{Status: resp.StatusCode, Msg: string(b)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

func (p *principal) s3() *s3.Client {
	return s3.New(s3.Options{BaseEndpoint: aws.String(p.endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(p.creds.AccessKeyID, p.creds.SecretAccessKey, p.creds.SessionToken),
		HTTPClient:  p.http, Retryer: aws.NopRetryer{}})
}

func (p *principal) put(ctx context.Context, bucket, key, body string) error {
	_, err := p.s3().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))})
	return err
}

func (p *principal) get(ctx context.Context, bucket, key string) (string, error) {
	out, err := p.s3().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return "", err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return string(b), err
}

// code returns the error code of an S3 or control-API error.
func code(err error) string {
	var ae smithy.APIError
	if errAs(err, &ae) {
		return ae.ErrorCode()
	}
	var ce *apiError
	if errAs(err, &ce) {
		return ce.Code
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// leaseOf issues a lease with the owner's credentials.
func (p *principal) leaseOf(ctx context.Context, args map[string]any) (*principal, map[string]any, error) {
	var out struct {
		Lease map[string]any `json:"lease"`
	}
	if err := p.call(ctx, "lease/create", args, &out); err != nil {
		return nil, nil, err
	}
	l := out.Lease
	return &principal{endpoint: p.endpoint, http: p.http, creds: aws.Credentials{AccessKeyID: l["access_key_id"].(string),
		SecretAccessKey: l["secret_access_key"].(string), SessionToken: l["session_token"].(string)}}, l, nil
}
