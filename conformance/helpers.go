package conformance

import (
	"encoding/json"

	"github.com/agentnas/nas/apiv1"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func deleteInput(bucket, key string) *s3.DeleteObjectInput {
	return &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
}

// leaseFile is a lease as lease/create answered it with the endpoint it
// was issued by: what `nas lease create --json` writes.
type leaseFile struct {
	apiv1.Lease
	Endpoint string `json:"endpoint"`
}

// jsonLease renders a lease answer as a lease file for the mount.
func jsonLease(l apiv1.Lease, endpoint string) ([]byte, error) {
	return json.Marshal(leaseFile{Lease: l, Endpoint: endpoint})
}
