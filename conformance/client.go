package conformance

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// principal is a set of credentials talking to the gateway: the control
// API through api, S3 through the AWS SDK.
type principal struct {
	endpoint string
	creds    aws.Credentials
	http     *http.Client
	api      *client.Client
}

// newPrincipal returns a principal of endpoint with creds. A control call
// is tried once: the suite reports what the gateway answered.
func newPrincipal(endpoint string, creds aws.Credentials, hc *http.Client) *principal {
	return &principal{endpoint: endpoint, creds: creds, http: hc,
		api: client.New(client.Config{Endpoint: endpoint, Credentials: creds, HTTP: hc, Attempts: 1})}
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
	if c := client.Code(err); c != "" {
		return c
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// leaseOf issues a lease with the principal's credentials and returns a
// principal holding it.
func (p *principal) leaseOf(ctx context.Context, req apiv1.LeaseCreateRequest) (*principal, apiv1.Lease, error) {
	var out apiv1.LeaseResponse
	if err := p.api.Do(ctx, req, &out); err != nil {
		return nil, apiv1.Lease{}, err
	}
	l := out.Lease
	return newPrincipal(p.endpoint, aws.Credentials{AccessKeyID: l.AccessKeyID, SecretAccessKey: l.SecretAccessKey,
		SessionToken: l.SessionToken}, p.http), l, nil
}
