package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/source"
	"github.com/agentnas/nas/source/sourcetest"
)

func TestS3Conformance(t *testing.T) {
	t.Parallel()
	for _, versioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("versioned=%v", versioned), func(t *testing.T) {
			sourcetest.TestSource(t, func(t *testing.T, objs map[string][]byte) sourcetest.Fixture {
				rm := startRemote(t)
				rm.mkBucket(t, "conf")
				if versioned {
					_, err := rm.cl.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String("conf"),
						VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
					must(t, err)
				}
				rm.put(t, "conf", "outside", []byte("not under the prefix"))
				for k, v := range objs {
					rm.put(t, "conf", "root/"+k, v)
					rm.put(t, "conf", "root/"+k, v) // a second version of each
				}
				s, err := source.NewS3(source.S3Config{Endpoint: rm.URL, Bucket: "conf", Prefix: "root/", PathStyle: true,
					AccessKey: "k", SecretKey: "s", Versioned: versioned, Retry: testRetry})
				must(t, err)
				if got := s.DetectVersioning(context.Background()); got != versioned {
					t.Fatalf("DetectVersioning = %v", got)
				}
				t.Cleanup(func() { s.Close() })
				return sourcetest.Fixture{Source: s, Replace: func(t *testing.T, key string, data []byte) {
					rm.put(t, "conf", "root/"+key, data)
				}}
			})
		})
	}
}

func TestDirConformance(t *testing.T) {
	t.Parallel()
	sourcetest.TestSource(t, func(t *testing.T, objs map[string][]byte) sourcetest.Fixture {
		root := t.TempDir()
		for k, v := range objs {
			p := filepath.Join(root, filepath.FromSlash(k))
			must(t, os.MkdirAll(filepath.Dir(p), 0o700))
			must(t, os.WriteFile(p, v, 0o600))
		}
		d, err := source.OpenDir(root)
		must(t, err)
		t.Cleanup(func() { d.Close() })
		return sourcetest.Fixture{Source: d, Replace: func(t *testing.T, key string, data []byte) {
			p := filepath.Join(root, filepath.FromSlash(key))
			must(t, os.WriteFile(p, data, 0o600))
			later := time.Now().Add(time.Hour)
			must(t, os.Chtimes(p, later, later))
		}}
	})
}
