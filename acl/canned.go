package acl

import "fmt"

// cannedNames are the names Canned accepts, as x-amz-acl and the POST
// form's acl field carry them.
var cannedNames = []string{"private", "public-read", "public-read-write", "authenticated-read",
	"aws-exec-read", "bucket-owner-read", "bucket-owner-full-control", "log-delivery-write"}

// Canned expands the canned ACL name as S3 does, for an object or (when
// bucket is set) a bucket of owner. The bucket owner is always the
// object owner here, so bucket-owner-read and bucket-owner-full-control
// add no grant of their own (as on S3 when one account owns both), and
// on a bucket S3 ignores them: both give Private.
//
//	private                    owner FULL_CONTROL
//	public-read                + AllUsers READ
//	public-read-write          + AllUsers READ, AllUsers WRITE
//	authenticated-read         + AuthenticatedUsers READ
//	aws-exec-read              + EC2 READ
//	bucket-owner-read          (owner FULL_CONTROL)
//	bucket-owner-full-control  (owner FULL_CONTROL)
//	log-delivery-write         + LogDelivery WRITE, LogDelivery READ_ACP
func Canned(name, owner string) (ACL, error) {
	a := Private(owner)
	switch name {
	case "private", "bucket-owner-read", "bucket-owner-full-control":
	case "public-read":
		a.Grants = append(a.Grants, Grant{GroupOf(AllUsers), Read})
	case "public-read-write":
		a.Grants = append(a.Grants, Grant{GroupOf(AllUsers), Read}, Grant{GroupOf(AllUsers), Write})
	case "authenticated-read":
		a.Grants = append(a.Grants, Grant{GroupOf(AuthenticatedUsers), Read})
	case "aws-exec-read":
		a.Grants = append(a.Grants, Grant{User(EC2ID), Read})
	case "log-delivery-write":
		a.Grants = append(a.Grants, Grant{GroupOf(LogDelivery), Write}, Grant{GroupOf(LogDelivery), ReadACP})
	default:
		return ACL{}, fmt.Errorf("%q: %w", name, ErrUnknownCanned)
	}
	return a, nil
}
