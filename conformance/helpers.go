package conformance

import (
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func deleteInput(bucket, key string) *s3.DeleteObjectInput {
	return &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
}

// jsonLease renders a lease answer as a lease file for the mount.
func jsonLease(l map[string]any, endpoint string) ([]byte, error) {
	m := map[string]any{}
	for k, v := range l {
		m[k] = v
	}
	m["endpoint"] = endpoint
	return json.Marshal(m)
}
