package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/nastest"
)

// BenchmarkLeaseVsOwner times, alternately in one run, a 4 KiB GET with
// the owner's keys (authentication only) and the same GET with a lease's
// (the door's whole work: the chain loaded, the request and bytes
// charged, the glob check, the read manifest), and with a child lease
// (one more ancestor). It reports each and the ratios to the owner's.
func BenchmarkLeaseVsOwner(b *testing.B) {
	srv := nastest.Start(b)
	ctx := context.Background()
	own := client(srv)
	api := nasclient.New(nasclient.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(api.Do(ctx, apiv1.RepoCreateRequest{Repo: "door", Protected: new(bool)}, nil))
	_, err := own.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("door"), Key: aws.String("shared/obj"), Body: bytes.NewReader(randomBytes(4 << 10))})
	must(err)
	must(api.Do(ctx, apiv1.RolePutRequest{Role: lease.Role{Name: "bench", Repo: "door", Branch: "main",
		View: []lease.Rule{{Path: "shared/**", Actions: []lease.Action{lease.List, lease.Read}}}}}, nil))
	var l apiv1.LeaseResponse
	must(api.Do(ctx, apiv1.LeaseCreateRequest{Repo: "door", Role: "bench", Branch: "main", TTL: "1h",
		Budgets: lease.Budgets{Requests: 1 << 40, BytesRead: 1 << 50}}, &l))
	lc := leaseClient(srv, l.Lease)
	var child apiv1.LeaseResponse
	must(nasclient.New(nasclient.Config{Endpoint: srv.Endpoint, Credentials: credsOf(l.Lease)}).Do(ctx, apiv1.LeaseCreateRequest{TTL: "30m"}, &child))
	cc := leaseClient(srv, child.Lease)

	get := func(c *s3.Client) time.Duration {
		start := time.Now()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("door"), Key: aws.String("shared/obj")})
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
		return time.Since(start)
	}
	var tOwner, tLease, tChild time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tOwner += get(own)
		tLease += get(lc)
		tChild += get(cc)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tOwner.Nanoseconds())/n, "owner-ns/get")
	b.ReportMetric(float64(tLease.Nanoseconds())/n, "lease-ns/get")
	b.ReportMetric(float64(tChild.Nanoseconds())/n, "child-ns/get")
	b.ReportMetric(float64(tLease)/float64(tOwner), "lease/owner")
	b.ReportMetric(float64(tChild)/float64(tOwner), "child/owner")
}

func credsOf(l apiv1.Lease) aws.Credentials {
	return aws.Credentials{AccessKeyID: l.AccessKeyID, SecretAccessKey: l.SecretAccessKey, SessionToken: l.SessionToken}
}

// leaseClient is an S3 client with a lease's temporary credentials.
func leaseClient(srv *nastest.Server, l apiv1.Lease) *s3.Client {
	c := credsOf(l)
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
		HTTPClient:                 &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		APIOptions:                 []func(*middleware.Stack) error{v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware},
	})
}
