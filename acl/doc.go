// Package acl is the vocabulary of S3 access control lists: grants of a
// permission to a grantee, the canned ACLs and how they expand, the
// x-amz-grant-* header syntax, and one canonical encoding.
//
// An ACL here is a record, not a rule: the gateway stores and returns
// what a client set, and admits requests only by the owner's credentials
// and leases (package auth). No grant, public-read included, lets anyone
// else in. The owner is implicit: it is the gateway's one account, so
// an ACL holds only its grants, and no stored ACL means Private.
//
// Encoding (Encode): a format byte (1), then per grant, in order, the
// grantee kind byte, the permission byte, a uvarint length and the
// grantee's value (canonical ID, group URI or e-mail address). A grant
// costs 3 bytes plus its value: about 67 for the owner, 50 for AllUsers.
// Grants keep the order they were set in (GET answers them so), and the
// empty list (every grant revoked) encodes as the format byte alone, so
// it differs from no ACL at all.
package acl
